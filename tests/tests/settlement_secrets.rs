//! The settlement secrets — `CDP_API_KEY_SECRET`, `X402_FACILITATOR_AUTH`, `SETTLER_PRIVATE_KEY`
//! and `BASE_RPC_URL` (which carries an API key) — never reach a log line, even on the paths that
//! log the most: credentials refused, outcomes unknown, the chain unreachable. Each test runs the
//! real `api` binary with `LOG_FORMAT=json` at `RUST_LOG=debug` and reads what it wrote.

use grove_tests::{
    TestDb,
    api_process::ApiProcess,
    cdp::TestCdpKey,
    chain::{Chain, SETTLER_KEY},
    default_env,
    facilitator::{FakeFacilitator, SettleScript},
    llm::{FakeLlm, caller_body},
    wait_until,
    x402::{PayOptions, TestWallet},
};
use serde_json::Value;
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";
const AUTH_SECRET: &str = "Bearer fac-secret-9f8e7d6c5b4a39281706";
const RPC_SECRET: &str = "rpc-secret-1a2b3c4d5e6f7a8b9c0d";
const KEY_ID: &str = "organizations/0f6a2c1e-org/apiKeys/4b1d9e57-key";

/// What every run shares: a database, a model, JSON logs at debug, quick sweeps.
fn env(db: &TestDb, llm: &FakeLlm, extra: &[(&str, String)]) -> Vec<(String, String)> {
    let mut env = default_env();
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("LLM_BASE_URL".into(), llm.openai_base());
    env.insert("RUST_LOG".into(), "debug".into());
    env.insert("SWEEP_INTERVAL_S".into(), "1".into());
    env.insert("CALL_DEADLINE_S".into(), "2".into());
    env.insert("X402_FACILITATOR_TIMEOUT_S".into(), "1".into());
    for (k, v) in extra {
        env.insert((*k).into(), v.clone());
    }
    env.into_iter().collect()
}

/// `BASE_RPC_URL` for `chain`, with an API key in it the way hosted RPCs take one.
fn rpc_url(chain: &Chain) -> String {
    chain
        .url
        .replace("http://", &format!("http://grove:{RPC_SECRET}@"))
}

/// Pays for one call through the process; returns the status.
async fn pay(api: &ApiProcess, wallet: &TestWallet, key: &str) -> u16 {
    let client = grove_common::http_client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let url = format!("{}{PATH}", api.url);
    let body = caller_body("diagnose_growth").to_string();
    let post = || {
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.clone())
    };
    let challenge = post().send().await.expect("challenge");
    assert_eq!(challenge.status(), 402);
    let required = challenge.headers()["payment-required"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let payment = wallet.pay(&required, PayOptions::default());
    let r = post()
        .header("payment-signature", payment)
        .send()
        .await
        .expect("answer");
    r.status().as_u16()
}

/// Fails naming any secret (or a long piece of one) found in the log.
fn assert_clean(log: &str, secrets: &[&str]) {
    for secret in secrets {
        let pieces = secret
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 16 && !l.starts_with("-----"));
        for piece in std::iter::once(*secret).chain(pieces) {
            let line = log.lines().find(|l| l.contains(piece));
            assert!(
                line.is_none(),
                "a secret reached the log: {piece:.12}… in {line:?}"
            );
        }
    }
}

fn logged(log: &str, message: &str) -> bool {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|v| v["message"].as_str().is_some_and(|m| m.contains(message)))
}

#[tokio::test]
async fn a_facilitator_settlement_logs_neither_its_auth_header_nor_the_rpc_key() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let (db, llm, facilitator) = (
        TestDb::new().await,
        FakeLlm::start().await,
        FakeFacilitator::start().await,
    );
    let api = ApiProcess::start(&env(
        &db,
        &llm,
        &[
            ("X402_FACILITATOR_URL", facilitator.url().to_owned()),
            ("X402_FACILITATOR_AUTH", AUTH_SECRET.to_owned()),
            ("BASE_RPC_URL", rpc_url(&chain)),
        ],
    ))
    .await;
    let wallet = TestWallet::new();

    // Refused credentials: an error a person can act on, naming the variable, not its value.
    facilitator.expect_auth("Bearer rotated");
    assert_eq!(pay(&api, &wallet, "refused").await, 503);
    wait_until("the credentials error", async || {
        logged(&api.log(), "refused our credentials")
    })
    .await;
    assert!(api.log().contains("X402_FACILITATOR_AUTH"));

    // An unknown outcome, reconciled while the chain goes away.
    facilitator.expect_auth(AUTH_SECRET);
    facilitator.script_next(SettleScript::Hang(Duration::from_secs(3)));
    facilitator.script(SettleScript::Down);
    assert_eq!(pay(&api, &wallet, "unknown").await, 504);
    drop(chain);
    wait_until("an RPC failure logged", async || {
        logged(&api.log(), "authorization unreadable on chain")
    })
    .await;

    let log = api.log();
    assert!(logged(&log, "facilitator answered") || logged(&log, "settlement outcome unknown"));
    assert_clean(
        &log,
        &[AUTH_SECRET, "fac-secret-9f8e7d6c5b4a39281706", RPC_SECRET],
    );
}

#[tokio::test]
async fn a_cdp_settlement_never_logs_the_key_secret() {
    let (db, llm, facilitator) = (
        TestDb::new().await,
        FakeLlm::start().await,
        FakeFacilitator::start().await,
    );
    for key in [TestCdpKey::ed25519(51), TestCdpKey::p256(52)] {
        let api = ApiProcess::start(&env(
            &db,
            &llm,
            &[
                ("X402_FACILITATOR_URL", facilitator.url().to_owned()),
                ("CDP_API_KEY_ID", KEY_ID.to_owned()),
                ("CDP_API_KEY_SECRET", key.secret()),
            ],
        ))
        .await;
        let wallet = TestWallet::random();
        // Another key is expected: ours is refused.
        facilitator.expect_cdp_token(KEY_ID, TestCdpKey::ed25519(99).public());
        assert_eq!(pay(&api, &wallet, "refused").await, 503);
        facilitator.expect_cdp_token(KEY_ID, key.public());
        facilitator.script(SettleScript::Success);
        assert_eq!(pay(&api, &wallet, "paid").await, 200);
        let log = api.log();
        assert!(logged(&log, "refused our credentials"));
        assert!(log.contains("CDP_API_KEY_ID/CDP_API_KEY_SECRET"));
        assert_clean(&log, &[&key.secret()]);
    }
}

#[tokio::test]
async fn our_own_settlement_never_logs_the_settler_key_or_the_rpc_key() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let (db, llm) = (TestDb::new().await, FakeLlm::start().await);
    let api = ApiProcess::start(&env(
        &db,
        &llm,
        &[
            ("X402_SETTLEMENT", "self".to_owned()),
            ("BASE_RPC_URL", rpc_url(&chain)),
            ("SETTLER_PRIVATE_KEY", SETTLER_KEY.to_owned()),
            ("X402_SETTLE_TIMEOUT_S", "5".to_owned()),
        ],
    ))
    .await;
    let wallet = TestWallet::new();
    chain.mint(wallet.address(), 1_000_000).await;
    assert_eq!(pay(&api, &wallet, "paid").await, 200);

    // The chain goes away: nothing can be sent, which is our fault, not the payer's.
    drop(chain);
    assert_eq!(pay(&api, &wallet, "rpc down").await, 503);
    let log = api.log();
    assert!(logged(&log, "x402.settle_self sent"));
    assert!(logged(&log, "RPC unavailable"));
    let bare_key = SETTLER_KEY.trim_start_matches("0x");
    assert_clean(&log, &[SETTLER_KEY, bare_key, RPC_SECRET]);
}
