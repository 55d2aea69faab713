//! Production needs a chain to decide (issue 25): with `APP_ENV=production` the api refuses to
//! start without an https `BASE_RPC_URL`, in both settlement modes; and in any environment an
//! endpoint that is not Base (another chain id, or no USDC contract) stops start-up. Each refusal
//! is one line naming the variable and the fix.

use grove_common::config::Config;
use grove_tests::{chain::Chain, db::TestDb, default_env};
use serde_json::json;
use std::process::{Command, Stdio};

/// The api binary's output when started with `env` (and nothing else).
fn start_api(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(grove_tests::binary("api"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("api runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn production_without_a_chain_refuses_to_start_with_one_line() {
    let production = [
        ("APP_ENV", "production"),
        ("BIND_ADDR", "127.0.0.1:0"),
        ("DATABASE_URL", "sqlite::memory:"),
        ("X402_PAY_TO", grove_tests::PAY_TO),
        ("X402_FACILITATOR_URL", "https://facilitator.example"),
        ("SMS_PROVIDER", "twilio"),
        ("TWILIO_ACCOUNT_SID", "AC1"),
        ("TWILIO_AUTH_TOKEN", "t"),
        ("TWILIO_FROM", "+15550100"),
    ];
    for rpc in [None, Some("http://rpc.example")] {
        let mut env = production.to_vec();
        env.extend(rpc.map(|url| ("BASE_RPC_URL", url)));
        let (code, output) = start_api(&env);
        assert_eq!(code, Some(2), "{output}");
        let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {output}");
        assert!(
            lines[0].starts_with("configuration error: BASE_RPC_URL:")
                && lines[0].contains("https://"),
            "names the variable and the fix: {output}"
        );
    }
}

async fn start_error(chain: &Chain) -> String {
    let db = TestDb::new().await;
    let mut env = default_env();
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("BASE_RPC_URL".into(), chain.url.clone());
    let config = Config::from_map(&env).expect("configuration");
    match grove::build(config).await {
        Ok(_) => panic!("started on an endpoint that is not Base"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn an_endpoint_on_another_chain_stops_start_up_with_one_line() {
    let Some(chain) = Chain::start_on_chain(1, &[]).await else {
        return;
    };
    assert_eq!(
        start_error(&chain).await,
        "settlement: BASE_RPC_URL serves chain 1, not Base (8453): point it at a Base mainnet JSON-RPC endpoint"
    );
}

#[tokio::test]
async fn an_endpoint_without_usdc_stops_start_up_with_one_line() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    chain
        .rpc("anvil_setCode", json!([grove_tests::chain::USDC, "0x"]))
        .await;
    let error = start_error(&chain).await;
    assert!(
        error.starts_with("settlement: BASE_RPC_URL has no contract at USDC's address")
            && error.ends_with("point it at a Base mainnet JSON-RPC endpoint")
            && !error.contains('\n'),
        "{error}"
    );
}
