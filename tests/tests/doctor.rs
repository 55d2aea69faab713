//! `api check` and `worker check`: every dependency the configuration names is probed against a
//! loopback fake that speaks its wire format (a real anvil for the chain), and each finding is
//! one line with ✓ or ✗ and, for a failure, the fix. The command exits non-zero on a failure.

use grove_common::{
    config::Config,
    doctor::{Report, Verdict},
};
use grove_tests::{
    PAY_TO, TestDb,
    chain::Chain,
    default_env,
    facilitator::FakeFacilitator,
    llm::{FakeLlm, Reply},
    paid::REDIS_URL,
    twilio::{ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, MESSAGING_SERVICE_SID},
};
use std::{collections::HashMap, process::Command};

const FACILITATOR_AUTH: &str = "Bearer doctor-test";

/// The fakes a full production-like configuration points at.
struct Rig {
    _db: TestDb,
    facilitator: FakeFacilitator,
    llm: FakeLlm,
    twilio: FakeTwilio,
    env: HashMap<String, String>,
}

async fn rig(chain: &Chain) -> Rig {
    let db = TestDb::new().await;
    let facilitator = FakeFacilitator::start().await;
    facilitator.expect_auth(FACILITATOR_AUTH);
    let llm = FakeLlm::start().await;
    let twilio = FakeTwilio::start().await;
    let mut env = default_env();
    for (k, v) in [
        ("DATABASE_URL", db.url.as_str()),
        ("X402_PAY_TO", PAY_TO),
        ("X402_FACILITATOR_URL", facilitator.url()),
        ("X402_FACILITATOR_AUTH", FACILITATOR_AUTH),
        ("BASE_RPC_URL", chain.url.as_str()),
        ("LLM_PROVIDER", "openai"),
        ("LLM_BASE_URL", &llm.openai_base()),
        ("LLM_API_KEY", "sk-test"),
        ("SMS_PROVIDER", "twilio"),
        ("TWILIO_ACCOUNT_SID", ACCOUNT_SID),
        ("TWILIO_AUTH_TOKEN", AUTH_TOKEN),
        ("TWILIO_FROM", FROM),
        ("TWILIO_BASE_URL", twilio.url()),
    ] {
        env.insert(k.into(), v.into());
    }
    Rig {
        _db: db,
        facilitator,
        llm,
        twilio,
        env,
    }
}

async fn check(env: &HashMap<String, String>) -> Report {
    let config = Config::from_map(env).expect("configuration is valid");
    grove::check(&config).await
}

fn verdict<'r>(report: &'r Report, name: &str) -> &'r Verdict {
    &report
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check in\n{}", report.render()))
        .verdict
}

fn passed(report: &Report, name: &str) -> bool {
    matches!(verdict(report, name), Verdict::Pass(_))
}

/// The failure's problem text, or a panic naming what was found instead.
fn failure(report: &Report, name: &str) -> String {
    match verdict(report, name) {
        Verdict::Fail { problem, fix } => format!("{problem} — fix: {fix}"),
        other => panic!("{name} did not fail: {other:?}\n{}", report.render()),
    }
}

#[tokio::test]
async fn a_working_configuration_passes_every_check() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain).await;
    let report = check(&rig.env).await;
    for name in [
        "database",
        "pay-to",
        "facilitator",
        "facilitator credentials",
        "rpc",
        "model",
        "twilio account",
        "twilio sender",
    ] {
        assert!(passed(&report, name), "{name}:\n{}", report.render());
    }
    assert!(!report.failed(), "{}", report.render());
    // The model was asked once, with its schema enforced; nothing was sent or settled.
    assert_eq!(rig.llm.received(), 1);
    let body = &rig.llm.bodies()[0];
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(rig.twilio.sends(), 0);
    assert_eq!(rig.facilitator.settle_calls(), 0);
}

#[tokio::test]
async fn a_messaging_service_and_redis_are_probed_too() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let mut rig = rig(&chain).await;
    rig.env.remove("TWILIO_FROM");
    rig.env.insert(
        "TWILIO_MESSAGING_SERVICE_SID".into(),
        MESSAGING_SERVICE_SID.into(),
    );
    rig.env.insert("REDIS_URL".into(), REDIS_URL.into());
    let report = check(&rig.env).await;
    assert!(passed(&report, "redis"), "{}", report.render());
    // With Redis the workers call the model and Twilio; `worker check` probes them there.
    assert!(matches!(
        verdict(&report, "model and SMS"),
        Verdict::Skip(_)
    ));
    assert_eq!(rig.llm.received(), 0);
    let worker =
        grove_worker::doctor::checks(&Config::from_map(&rig.env).expect("configuration is valid"))
            .await;
    let mut worker_report = Report::default();
    worker_report.extend(worker);
    assert!(
        passed(&worker_report, "twilio sender"),
        "{}",
        worker_report.render()
    );
    assert!(
        passed(&worker_report, "model"),
        "{}",
        worker_report.render()
    );
}

#[tokio::test]
async fn a_chain_that_is_not_base_fails_the_rpc_check() {
    let Some(chain) = Chain::start_on_chain(1, &[]).await else {
        return;
    };
    let rig = rig(&chain).await;
    let report = check(&rig.env).await;
    let problem = failure(&report, "rpc");
    assert!(
        problem.contains("serves chain 1, not Base (8453)"),
        "{problem}"
    );
    assert!(problem.contains("BASE_RPC_URL"), "{problem}");
    assert!(report.failed());
}

/// Circle's USDC on Base Sepolia, where the testnet's checks look for a contract.
const SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

#[tokio::test]
async fn on_the_testnet_a_base_mainnet_rpc_and_a_mainnet_facilitator_fail() {
    let Some(mainnet) = Chain::start().await else {
        return;
    };
    let mut rig = rig(&mainnet).await;
    rig.env.insert("X402_NETWORK".into(), "base-sepolia".into());
    let report = check(&rig.env).await;
    let rpc = failure(&report, "rpc");
    assert!(
        rpc.contains("serves chain 8453, not Base Sepolia (84532)"),
        "{rpc}"
    );
    assert!(rpc.contains("Base Sepolia JSON-RPC endpoint"), "{rpc}");
    // The fake lists exact on Base mainnet only.
    let facilitator = failure(&report, "facilitator");
    assert!(
        facilitator.contains("does not settle exact on eip155:84532"),
        "{facilitator}"
    );
    assert!(
        facilitator.contains("https://x402.org/facilitator"),
        "{facilitator}"
    );
}

#[tokio::test]
async fn on_the_testnet_base_sepolia_with_its_usdc_and_a_testnet_facilitator_pass() {
    let Some(sepolia) = Chain::start_on_chain(84532, &[]).await else {
        return;
    };
    let mut rig = rig(&sepolia).await;
    rig.env.insert("X402_NETWORK".into(), "base-sepolia".into());
    rig.facilitator
        .set_supported(&[(2, "exact", "eip155:84532"), (1, "exact", "base-sepolia")]);
    // The token is at mainnet's USDC address only: no USDC where the testnet's is.
    let report = check(&rig.env).await;
    let rpc = failure(&report, "rpc");
    assert!(
        rpc.contains(&format!("no contract at USDC's address {SEPOLIA_USDC}")),
        "{rpc}"
    );
    assert!(passed(&report, "facilitator"), "{}", report.render());

    sepolia
        .token_also_at(SEPOLIA_USDC.parse().expect("address"))
        .await;
    let report = check(&rig.env).await;
    assert!(passed(&report, "rpc"), "{}", report.render());
    assert!(
        report
            .render()
            .contains("✓ rpc: Base Sepolia (84532), USDC deployed"),
        "{}",
        report.render()
    );
    assert!(
        report
            .render()
            .contains("✓ facilitator: lists exact on eip155:84532"),
        "{}",
        report.render()
    );
}

#[tokio::test]
async fn a_facilitator_without_our_network_or_refusing_our_credentials_fails() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let mut rig = rig(&chain).await;
    rig.facilitator
        .set_supported(&[(2, "exact", "eip155:84532")]);
    rig.env
        .insert("X402_FACILITATOR_AUTH".into(), "Bearer wrong".into());
    let report = check(&rig.env).await;
    let network = failure(&report, "facilitator");
    assert!(
        network.contains("does not settle exact on eip155:8453"),
        "{network}"
    );
    assert!(network.contains("exact on eip155:84532"), "{network}");
    let credentials = failure(&report, "facilitator credentials");
    assert!(
        credentials.contains("X402_FACILITATOR_AUTH refused"),
        "{credentials}"
    );
    assert!(
        !report.render().contains("Bearer wrong"),
        "{}",
        report.render()
    );
    assert_eq!(rig.facilitator.settle_calls(), 0);
}

#[tokio::test]
async fn a_model_without_structured_output_fails_the_model_check() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let rig = rig(&chain).await;
    rig.llm.script([Reply::StructuredUnsupported]);
    let report = check(&rig.env).await;
    let problem = failure(&report, "model");
    assert!(
        problem.contains("does not support structured output"),
        "{problem}"
    );
    assert!(problem.contains("LLM_STRUCTURED"), "{problem}");
    // Asked with json_schema, refused, then asked again one step down.
    assert_eq!(rig.llm.received(), 2);
}

#[tokio::test]
async fn a_bad_twilio_token_fails_without_printing_it() {
    let Some(chain) = Chain::start().await else {
        return;
    };
    let mut rig = rig(&chain).await;
    let wrong = "0123456789abcdef0123456789abcdef";
    rig.env.insert("TWILIO_AUTH_TOKEN".into(), wrong.into());
    let report = check(&rig.env).await;
    let problem = failure(&report, "twilio account");
    assert!(problem.contains("refused our credentials"), "{problem}");
    assert!(problem.contains("TWILIO_AUTH_TOKEN"), "{problem}");
    assert!(matches!(
        verdict(&report, "twilio sender"),
        Verdict::Skip(_)
    ));
    assert!(!report.render().contains(wrong));
    assert_eq!(rig.twilio.sends(), 0);
}

#[tokio::test]
async fn an_unreachable_database_and_redis_fail_with_their_fixes() {
    let mut env = default_env();
    env.insert(
        "DATABASE_URL".into(),
        "postgres://grove:s3cret@127.0.0.1:1/grove".into(),
    );
    env.insert("REDIS_URL".into(), "redis://127.0.0.1:1".into());
    let report = check(&env).await;
    let database = failure(&report, "database");
    assert!(database.contains("DATABASE_URL"), "{database}");
    assert!(!report.render().contains("s3cret"), "{}", report.render());
    assert!(failure(&report, "redis").contains("REDIS_URL"));
}

/// The binaries: `--help` and `--version` everywhere, and `check`'s exit status and lines.
#[test]
fn every_binary_answers_help_and_version_and_check_exits_non_zero_on_a_failure() {
    for name in ["api", "worker", "migrate"] {
        for flag in ["--help", "--version"] {
            let out = Command::new(grove_tests::binary(name))
                .arg(flag)
                .output()
                .expect("runs");
            assert!(out.status.success(), "{name} {flag}: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(name), "{name} {flag}: {text}");
        }
    }
    let help = Command::new(grove_tests::binary("api"))
        .arg("--help")
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&help.stdout).contains("check"));

    let dir = std::env::temp_dir().join(format!("grove-doctor-{}", rand::random::<u64>()));
    let out = Command::new(grove_tests::binary("api"))
        .arg("check")
        .env_clear()
        .env(
            "DATABASE_URL",
            format!("sqlite://{}.db?mode=rwc", dir.display()),
        )
        .env("LLM_PROVIDER", "anthropic")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("✓ database"), "{text}");
    assert!(text.contains("✗ model: LLM_API_KEY"), "{text}");
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.contains("checks failed")),
        "{text}"
    );
    let _ = std::fs::remove_file(format!("{}.db", dir.display()));
}
