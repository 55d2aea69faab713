//! Rate limits: a burst from one address gets 429 with Retry-After while another address is
//! served; a client cannot pick its own address; a payer's new calls are limited but what it
//! already paid for never is (a repeat, a payment retry), and the refused payment stays good.

use grove_tests::{
    paid::{Options, spawn_paid},
    spawn_app_with,
    x402::PayOptions,
};
use serde_json::{Value, json};
use std::time::Duration;

const CATALOG: &str = "/api/v1/agents";
const CALL: &str = "/api/v1/agents/mary/call";

async fn get_from(app: &grove_tests::TestApp, client_ip: &str) -> reqwest::Response {
    app.client
        .get(app.url(CATALOG))
        .header("x-forwarded-for", format!("198.51.100.200, {client_ip}"))
        .send()
        .await
        .expect("reaches the api")
}

async fn assert_limited(r: reqwest::Response) {
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "rate_limited");
    assert!(body["error"]["request_id"].is_string());
}

#[tokio::test]
async fn a_burst_from_one_address_is_refused_while_another_address_is_served() {
    // 60 a minute: bursts of 12.
    let app = spawn_app_with(
        &[
            ("RATE_LIMIT_PER_IP_PER_MIN", "60"),
            ("CLIENT_IP_HEADER", "X-Forwarded-For"),
        ],
        &[],
    )
    .await;
    for _ in 0..12 {
        assert_eq!(get_from(&app, "203.0.113.1").await.status(), 200);
    }
    assert_limited(get_from(&app, "203.0.113.1").await).await;
    assert_eq!(get_from(&app, "203.0.113.2").await.status(), 200);
    // Probes are never limited.
    let health = app
        .client
        .get(app.url("/healthz"))
        .header("x-forwarded-for", "203.0.113.1")
        .send()
        .await
        .expect("reaches the api");
    assert_eq!(health.status(), 200);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("grove_rate_limited_total{limit=\"ip\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn only_the_configured_header_names_the_client() {
    let app = spawn_app_with(
        &[
            ("RATE_LIMIT_PER_IP_PER_MIN", "60"),
            ("CLIENT_IP_HEADER", "X-Real-IP"),
        ],
        &[],
    )
    .await;
    let from = |forged: String| {
        app.client
            .get(app.url(CATALOG))
            .header("x-real-ip", "203.0.113.50")
            .header("x-forwarded-for", forged)
            .send()
    };
    for i in 0..12 {
        let r = from(format!("203.0.113.{i}"))
            .await
            .expect("reaches the api");
        assert_eq!(r.status(), 200);
    }
    // All twelve counted against X-Real-IP's address, whatever X-Forwarded-For said.
    assert_limited(from("203.0.113.99".into()).await.expect("reaches the api")).await;
}

#[tokio::test]
async fn loopback_is_not_limited() {
    // The operator's own tools, or a proxy on the same host that does not name the client.
    let app = spawn_app_with(&[("RATE_LIMIT_PER_IP_PER_MIN", "60")], &[]).await;
    for _ in 0..30 {
        assert_eq!(app.get(CATALOG).await.status(), 200);
    }
}

#[tokio::test]
async fn a_payer_over_its_limit_is_refused_new_calls_but_never_what_it_paid_for() {
    // 120 new paid calls a minute per payer: bursts of 60, one more every half second.
    let rig = spawn_paid(Options {
        extra_env: vec![("RATE_LIMIT_PER_PAYER_PER_MIN".into(), "120".into())],
        ..Options::default()
    })
    .await;
    let body = |i: usize| {
        // The caller's own words (the model's answer traces its figures to them), made distinct.
        let mut b = grove_tests::llm::caller_body("diagnose_growth");
        let text = b["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        b["messages"][0]["content"] = json!(format!("{text} (question {i})"));
        b
    };
    let first = body(0);
    let paid = rig.payment_for(CALL, &first, PayOptions::default()).await;
    assert_eq!(rig.send_paid(CALL, &first, &paid, None).await.status(), 200);
    // New calls until one is refused: the burst of 60, and what refilled meanwhile.
    let mut refused = None;
    for i in 1..200 {
        let new = body(i);
        let payment = rig.payment_for(CALL, &new, PayOptions::default()).await;
        let r = rig.send_paid(CALL, &new, &payment, None).await;
        if r.status() == 429 {
            assert_limited(r).await;
            refused = Some((i, new, payment));
            break;
        }
        assert_eq!(r.status(), 200, "call {i}");
    }
    let (served, new, payment) = refused.expect("a payer's burst of new calls ends in a 429");
    assert!(served >= 60, "only {served} calls before the limit");
    let settles = rig.facilitator.settle_calls();
    let model_calls = rig.llm.received();
    assert_eq!(settles, served, "nothing settled for the refused call");
    // The same payment again (a retry of the first call) and a re-signed repeat are served.
    let retry = rig.send_paid(CALL, &first, &paid, None).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(retry.headers()["idempotent-replay"], "true");
    let resigned = rig.payment_for(CALL, &first, PayOptions::default()).await;
    let repeat = rig.send_paid(CALL, &first, &resigned, None).await;
    assert_eq!(repeat.status(), 200);
    assert_eq!(repeat.headers()["idempotent-replay"], "true");
    assert_eq!(
        rig.facilitator.settle_calls(),
        settles,
        "nothing settled for the refusal or the repeats"
    );
    assert_eq!(rig.llm.received(), model_calls);

    // Once the payer's budget refills, the refused payment buys the call it was signed for.
    let mut bought = None;
    for _ in 0..100 {
        let r = rig.send_paid(CALL, &new, &payment, None).await;
        if r.status() != 429 {
            bought = Some(r.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(bought, Some(reqwest::StatusCode::OK));
    assert_eq!(rig.facilitator.settle_calls(), settles + 1);
}

#[tokio::test]
async fn unpaid_mcp_tool_calls_count_against_the_address_like_http() {
    let app = spawn_app_with(
        &[
            ("RATE_LIMIT_PER_IP_PER_MIN", "60"),
            ("CLIENT_IP_HEADER", "X-Real-IP"),
        ],
        &[],
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "diagnose_growth",
        "arguments": {"coach": "mary", "messages": [{"role": "user", "content": "Flat revenue."}], "sandbox": true}}});
    let post = || {
        app.client
            .post(app.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("x-real-ip", "203.0.113.77")
            .body(call.to_string())
            .send()
    };
    let mut answers = Vec::new();
    for _ in 0..13 {
        let r = post().await.expect("reaches /mcp");
        assert_eq!(r.status(), 200);
        answers.push(r.json::<Value>().await.expect("json-rpc"));
    }
    // The first twelve ran (the free sample); the thirteenth is a rate-limit error result.
    assert_eq!(
        answers[11]["result"]["isError"],
        json!(false),
        "{}",
        answers[11]
    );
    let limited = &answers[12]["result"];
    assert_eq!(limited["isError"], true, "{limited}");
    assert_eq!(
        limited["structuredContent"]["error"]["code"],
        "rate_limited"
    );
    assert!(limited["structuredContent"]["error"]["retry_after_s"].is_u64());
}
