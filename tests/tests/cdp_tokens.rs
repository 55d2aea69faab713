//! Coinbase's (CDP) facilitator authenticates every request with a fresh token signed by the
//! operator's CDP API key (issue 7 item 3, `../shared/notes/x402.md` §7.1). A loopback
//! facilitator verifies the tokens with the public key, as CDP does; the last test compares our
//! tokens with those of the official Python SDK (`cdp-sdk`, installed by `scripts/test`).

use grove_common::config::{CdpCredentials, CdpKey, Config, ConfigError};
use grove_http::{CdpSigner, Facilitator, FacilitatorError, HttpFacilitator, SettleRequest};
use grove_tests::{
    cdp::{self, TestCdpKey},
    default_env,
    facilitator::FakeFacilitator,
    llm::caller_body,
    paid::{Options, spawn_paid},
};
use serde_json::{Value, json};
use std::{
    collections::BTreeSet,
    path::PathBuf,
    process::Command,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

const PATH: &str = "/api/v1/agents/mary/call";
const KEY_ID: &str = "organizations/0f6a2c1e-org/apiKeys/4b1d9e57-key";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn signer(key: &TestCdpKey) -> CdpSigner {
    CdpSigner::new(CdpCredentials {
        key_id: KEY_ID.into(),
        key: CdpKey::parse(&key.secret()).expect("a valid CDP key"),
    })
}

fn bearer(header: &Option<String>) -> &str {
    header
        .as_deref()
        .and_then(|h| h.strip_prefix("Bearer "))
        .expect("a bearer token")
}

/// Two paid calls through an app configured with only the CDP key variables (and the fake's
/// URL): both settle, each `/settle` carries its own token, and each token verifies.
async fn paid_calls_carry_a_fresh_verified_token_each(key: TestCdpKey) {
    let rig = spawn_paid(Options {
        extra_env: vec![
            ("CDP_API_KEY_ID".into(), KEY_ID.into()),
            ("CDP_API_KEY_SECRET".into(), key.secret()),
        ],
        ..Options::default()
    })
    .await;
    rig.facilitator.expect_cdp_token(KEY_ID, key.public());
    let body = caller_body("diagnose_growth");

    for idempotency_key in ["cdp-first", "cdp-second"] {
        let r = rig.pay_and_call(PATH, &body, Some(idempotency_key)).await;
        assert_eq!(r.status(), 200, "{:?}", rig.facilitator.cdp_refusals());
    }

    assert_eq!(rig.facilitator.settle_calls(), 2);
    assert_eq!(rig.facilitator.cdp_refusals(), Vec::<String>::new());
    let headers = rig.facilitator.auth_headers();
    let (first, second) = (bearer(&headers[0]), bearer(&headers[1]));
    assert_ne!(first, second, "a new token for every request");
    let uri = format!(
        "POST {}/settle",
        rig.facilitator.url().trim_start_matches("http://")
    );
    for token in [first, second] {
        let verified = cdp::verify(token, &key.public()).expect("signed by the key");
        assert_eq!(verified.header["alg"], key.alg());
        assert_eq!(verified.header["kid"], KEY_ID);
        assert_eq!(verified.claims["uris"], json!([uri]));
        let (iat, exp) = (&verified.claims["iat"], &verified.claims["exp"]);
        assert_eq!(
            exp.as_u64().zip(iat.as_u64()).map(|(e, i)| e - i),
            Some(120)
        );
        cdp::check_claims(&verified, KEY_ID, &uri, now()).expect("what CDP requires");
    }
}

#[tokio::test]
async fn paid_calls_through_cdp_carry_a_fresh_eddsa_token_each() {
    paid_calls_carry_a_fresh_verified_token_each(TestCdpKey::ed25519(21)).await;
}

#[tokio::test]
async fn paid_calls_through_cdp_carry_a_fresh_es256_token_each() {
    paid_calls_carry_a_fresh_verified_token_each(TestCdpKey::p256(22)).await;
}

/// A settle request shaped like a real v2 one (the facilitator under test checks only auth).
fn request() -> SettleRequest {
    let requirements = json!({
        "scheme": "exact", "network": "eip155:8453", "amount": "180000",
        "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "payTo": grove_tests::PAY_TO, "maxTimeoutSeconds": 300,
        "extra": {"name": "USD Coin", "version": "2"},
    });
    SettleRequest {
        x402_version: 2,
        payment_payload: json!({"x402Version": 2, "accepted": requirements, "payload": {}}),
        payment_requirements: requirements,
    }
}

#[tokio::test]
async fn a_token_signed_by_another_key_is_refused() {
    let fake = FakeFacilitator::start().await;
    fake.expect_cdp_token(KEY_ID, TestCdpKey::ed25519(31).public());
    let timeout = Duration::from_secs(5);

    for wrong in [TestCdpKey::ed25519(32), TestCdpKey::p256(33)] {
        let client =
            HttpFacilitator::with_cdp(fake.url(), signer(&wrong), timeout).expect("client");
        let err = client.settle(&request()).await.expect_err("refused");
        assert!(
            matches!(err, FacilitatorError::Unauthorized { status: 401 }),
            "{err:?}"
        );
    }
    let refusals = fake.cdp_refusals();
    assert_eq!(
        refusals,
        ["bad EdDSA signature", "alg \"ES256\" for an Ed25519 key"]
    );

    // The right key, for comparison, settles.
    let right = HttpFacilitator::with_cdp(fake.url(), signer(&TestCdpKey::ed25519(31)), timeout)
        .expect("client");
    assert!(right.settle(&request()).await.expect("settles").success);
    assert_eq!(fake.settle_calls(), 3);
}

#[test]
fn a_malformed_cdp_key_stops_start_up_naming_the_variable_without_echoing_it() {
    let truncated = TestCdpKey::ed25519(41).secret()[..60].to_owned();
    let mut env = default_env();
    env.insert("CDP_API_KEY_ID".into(), KEY_ID.into());
    env.insert("CDP_API_KEY_SECRET".into(), truncated.clone());
    let err = Config::from_map(&env).expect_err("refused at start-up");
    let ConfigError::Invalid { var, problem } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*var, "CDP_API_KEY_SECRET");
    assert!(!err.to_string().contains(&truncated), "{problem}");

    env.insert("CDP_API_KEY_SECRET".into(), TestCdpKey::p256(42).secret());
    let config = Config::from_map(&env).expect("a valid key");
    assert_eq!(
        config.facilitator_url.as_deref(),
        Some("https://api.cdp.coinbase.com/platform/v2/x402")
    );
    assert!(!format!("{config:?}").contains("PRIVATE KEY"));
}

/// The Python interpreter with the official `cdp-sdk`: `GROVE_CDP_PYTHON`, else the venv
/// `scripts/test` makes under `target/`, else `python3` if it has the SDK.
fn python_with_cdp_sdk() -> Option<PathBuf> {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/cdp-sdk-venv/bin/python");
    let candidates = [
        std::env::var_os("GROVE_CDP_PYTHON").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import cdp.auth"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `cdp.auth.generate_jwt` for the settle request of CDP's facilitator, with the audience the
/// TypeScript SDK sets by default.
const SDK_SCRIPT: &str = r#"
import os
from cdp.auth import JwtOptions, generate_jwt
print(generate_jwt(JwtOptions(
    api_key_id=os.environ["KEY_ID"],
    api_key_secret=os.environ["KEY_SECRET"],
    request_method="POST",
    request_host="api.cdp.coinbase.com",
    request_path="/platform/v2/x402/settle",
    expires_in=120,
    audience=["cdp_service"],
)))
"#;

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn is_digits_or_hex(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn our_tokens_have_the_shape_of_the_official_sdks_and_verify_the_same_way() {
    let Some(python) = python_with_cdp_sdk() else {
        assert!(
            std::env::var_os("GROVE_REQUIRE_CDP_SDK").is_none(),
            "GROVE_REQUIRE_CDP_SDK is set but no python3 with cdp-sdk was found"
        );
        eprintln!("skipped: no python3 with cdp-sdk (scripts/test installs it)");
        return;
    };
    let uri = "POST api.cdp.coinbase.com/platform/v2/x402/settle";
    for key in [TestCdpKey::ed25519(51), TestCdpKey::p256(52)] {
        let output = Command::new(&python)
            .args(["-c", SDK_SCRIPT])
            .env("KEY_ID", KEY_ID)
            .env("KEY_SECRET", key.secret())
            .output()
            .expect("python runs");
        assert!(
            output.status.success(),
            "the SDK failed for a {} key: {}",
            key.alg(),
            String::from_utf8_lossy(&output.stderr)
        );
        let sdk_token = String::from_utf8(output.stdout).expect("utf-8");
        let sdk = cdp::verify(sdk_token.trim(), &key.public())
            .expect("our verifier accepts the SDK's token");
        let ours = cdp::verify(
            &signer(&key).token(uri, now(), rand::random()),
            &key.public(),
        )
        .expect("our token verifies");

        assert_eq!(keys(&ours.header), keys(&sdk.header), "header keys");
        for field in ["alg", "kid", "typ"] {
            assert_eq!(ours.header[field], sdk.header[field], "{field}");
        }
        // The Python SDK's nonce is 16 decimal digits, the TypeScript SDK's 32 hex characters
        // (ours): a string either way.
        assert!(is_digits_or_hex(&ours.header["nonce"]) && is_digits_or_hex(&sdk.header["nonce"]));

        // The Python SDK leaves out `iat`, which the TypeScript SDK sets (= nbf): every other
        // claim is the same, with the same values.
        let extra: Vec<String> = keys(&ours.claims)
            .difference(&keys(&sdk.claims))
            .cloned()
            .collect();
        assert_eq!(extra, ["iat"]);
        assert!(keys(&sdk.claims).is_subset(&keys(&ours.claims)));
        for field in ["sub", "iss", "aud", "uris"] {
            assert_eq!(ours.claims[field], sdk.claims[field], "{field}");
        }
        for token in [&ours, &sdk] {
            let (nbf, exp) = (token.claims["nbf"].as_u64(), token.claims["exp"].as_u64());
            let (Some(nbf), Some(exp)) = (nbf, exp) else {
                panic!("nbf and exp are integers: {}", token.claims);
            };
            assert_eq!(exp - nbf, 120);
            assert!(nbf.abs_diff(now()) <= 60);
        }
    }
}
