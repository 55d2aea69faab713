//! The x402 challenge (CONTRACT 3): both encodings, the price by tier, payTo, CORS, and the
//! cases that must not be offered for sale.

use base64::{Engine, engine::general_purpose::STANDARD};
use grove_tests::{BASE_URL, PAY_TO, action_body, coaching_body, spawn_app, spawn_app_with};
use serde_json::{Value, json};

const USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

fn decode_header(r: &reqwest::Response) -> Value {
    let raw = r
        .headers()
        .get("payment-required")
        .expect("PAYMENT-REQUIRED header")
        .to_str()
        .expect("ascii");
    let bytes = STANDARD.decode(raw).expect("standard padded base64");
    serde_json::from_slice(&bytes).expect("JSON")
}

#[tokio::test]
async fn unpaid_call_returns_402_with_both_encodings_at_the_tier_price() {
    let app = spawn_app().await;
    for (coach, mode, amount) in [
        ("mary", "diagnose_growth", "180000"),
        ("iris", "funnel_review", "250000"),
        ("violet", "plan_onboarding", "250000"),
        ("reed", "handle_objections", "450000"),
        ("willow", "scope_role", "450000"),
    ] {
        let path = format!("/api/v1/agents/{coach}/call");
        let r = app.post_json(&path, &coaching_body(mode), &[]).await;
        assert_eq!(r.status(), 402, "{mode}");
        let v2 = decode_header(&r);
        assert_eq!(v2["x402Version"], 2);
        assert_eq!(v2["error"], "payment_required");
        assert_eq!(v2["resource"]["url"], format!("{BASE_URL}{path}"));
        assert_eq!(v2["resource"]["mimeType"], "application/json");
        let accept = &v2["accepts"][0];
        assert_eq!(v2["accepts"].as_array().map(Vec::len), Some(1));
        assert_eq!(accept["scheme"], "exact");
        assert_eq!(accept["network"], "eip155:8453");
        assert_eq!(accept["amount"], amount, "{mode}");
        assert_eq!(accept["asset"], USDC);
        assert_eq!(accept["payTo"], PAY_TO);
        assert_eq!(accept["extra"], json!({"name": "USD Coin", "version": "2"}));
        assert!(
            accept["maxTimeoutSeconds"]
                .as_u64()
                .is_some_and(|t| t >= 60)
        );
        let bazaar = &v2["extensions"]["bazaar"];
        assert_eq!(bazaar["info"]["input"]["method"], "POST");
        assert_eq!(bazaar["info"]["input"]["body"]["mode"], mode);
        assert!(bazaar["schema"].is_object());

        let v1: Value = r.json().await.expect("v1 body");
        assert_eq!(v1["x402Version"], 1);
        assert_eq!(v1["error"], "payment_required");
        let a = &v1["accepts"][0];
        assert_eq!(a["scheme"], "exact");
        assert_eq!(a["network"], "base");
        assert_eq!(a["maxAmountRequired"], amount);
        assert_eq!(a["resource"], format!("{BASE_URL}{path}"));
        assert_eq!(a["payTo"], PAY_TO);
        assert_eq!(a["asset"], USDC);
        assert_eq!(a["extra"], json!({"name": "USD Coin", "version": "2"}));
        assert_eq!(a["mimeType"], "application/json");
        assert!(a["outputSchema"]["input"]["bodyFields"]["messages"].is_object());
        assert!(
            a["description"]
                .as_str()
                .is_some_and(|d| d.contains("development")),
            "local verification is labelled"
        );
    }
}

#[tokio::test]
async fn review_request_challenge_costs_twelve_cents() {
    let app = spawn_app().await;
    let r = app
        .post_json("/api/v1/actions/review-request/call", &action_body(), &[])
        .await;
    assert_eq!(r.status(), 402);
    assert_eq!(decode_header(&r)["accepts"][0]["amount"], "120000");
    let v1: Value = r.json().await.expect("json");
    assert_eq!(v1["accepts"][0]["maxAmountRequired"], "120000");
}

#[tokio::test]
async fn a_payment_header_is_never_served_before_payments_land() {
    let app = spawn_app().await;
    for header in ["payment-signature", "x-payment"] {
        let r = app
            .post_json(
                "/api/v1/agents/mary/call",
                &coaching_body("diagnose_growth"),
                &[(header, "eyJmb28iOjF9")],
            )
            .await;
        assert_eq!(r.status(), 402, "{header}");
        let v1: Value = r.json().await.expect("json");
        let error = v1["error"].as_str().expect("error");
        assert!(error.starts_with("payment_invalid:"), "{error}");
    }
}

/// The `Retry-After` of an answer, in seconds.
fn retry_after(r: &reqwest::Response) -> Option<u64> {
    r.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn without_a_pay_to_address_paid_endpoints_are_503_payments_disabled() {
    let app = spawn_app_with(&[], &["X402_PAY_TO"]).await;
    for (path, body) in [
        ("/api/v1/agents/mary/call", coaching_body("diagnose_growth")),
        ("/api/v1/actions/review-request/call", action_body()),
    ] {
        let r = app.post_json(path, &body, &[]).await;
        assert_eq!(r.status(), 503, "{path}");
        assert!(r.headers().get("payment-required").is_none());
        assert_eq!(retry_after(&r), Some(300), "{path}: when to look again");
        assert_eq!(
            r.json::<Value>().await.expect("json")["error"]["code"],
            "payments_disabled"
        );
    }
}

#[tokio::test]
async fn without_a_model_coaching_is_not_sold_but_the_action_is() {
    let app = spawn_app_with(&[], &["LLM_PROVIDER", "LLM_BASE_URL"]).await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 503);
    assert_eq!(retry_after(&r), Some(300));
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"]["code"],
        "unavailable"
    );
    let r = app
        .post_json("/api/v1/actions/review-request/call", &action_body(), &[])
        .await;
    assert_eq!(r.status(), 402);
}

/// Only a process that calls the model needs its key: the api of the distributed mode (jobs in
/// `worker` processes, over Redis) sells coaching without `LLM_API_KEY`; the api running jobs
/// itself refuses to start without it, naming the variable.
#[tokio::test]
async fn the_api_sells_coaching_without_a_model_key_when_workers_call_the_model() {
    let namespace = grove_tests::paid::namespace();
    let app = spawn_app_with(
        &[
            ("LLM_PROVIDER", "anthropic"),
            ("REDIS_URL", grove_tests::paid::REDIS_URL),
            ("QUEUE_NAMESPACE", &namespace),
        ],
        &["LLM_BASE_URL", "LLM_API_KEY"],
    )
    .await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 402);

    let db = grove_tests::TestDb::new().await;
    let mut env = grove_tests::default_env();
    env.insert("LLM_PROVIDER".into(), "anthropic".into());
    env.remove("LLM_BASE_URL");
    env.insert("DATABASE_URL".into(), db.url.clone());
    let config = grove_common::config::Config::from_map(&env).expect("configuration is valid");
    let Err(e) = grove::build(config).await else {
        panic!("the api that runs jobs itself started without LLM_API_KEY");
    };
    assert!(e.to_string().contains("LLM_API_KEY"), "{e}");
}

#[tokio::test]
async fn an_invalid_body_gets_its_error_never_a_challenge() {
    let app = spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &json!({"mode": "diagnose_growth"}),
            &[],
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(r.headers().get("payment-required").is_none());
}

#[tokio::test]
async fn cors_exposes_the_payment_headers() {
    let app = spawn_app().await;
    let r = app
        .client
        .post(app.url("/api/v1/agents/mary/call"))
        .header("origin", "https://agent.example")
        .header("content-type", "application/json")
        .body(coaching_body("diagnose_growth").to_string())
        .send()
        .await
        .expect("sent");
    let exposed = r
        .headers()
        .get("access-control-expose-headers")
        .expect("expose header")
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    for h in [
        "payment-required",
        "payment-response",
        "x-payment-response",
        "idempotent-replay",
    ] {
        assert!(exposed.contains(h), "{h} not exposed: {exposed}");
    }
    let pre = app
        .client
        .request(
            reqwest::Method::OPTIONS,
            app.url("/api/v1/agents/mary/call"),
        )
        .header("origin", "https://agent.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "payment-signature, x-payment, idempotency-key, x-grove-sandbox, content-type",
        )
        .send()
        .await
        .expect("preflight");
    assert!(pre.status().is_success());
    let allowed = pre
        .headers()
        .get("access-control-allow-headers")
        .expect("allow")
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    for h in [
        "payment-signature",
        "x-payment",
        "idempotency-key",
        "x-grove-sandbox",
    ] {
        assert!(allowed.contains(h), "{h} not allowed: {allowed}");
    }
}
