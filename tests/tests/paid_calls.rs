//! Paid coaching calls end to end: real EIP-3009 signatures, the loopback facilitator and model,
//! settlement, the envelope, receipts, replays and idempotency (CONTRACT 3, 4, 6).

use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::TimeDelta;
use grove_tests::{
    compile,
    llm::{FakeLlm, caller_body},
    paid::{Options, spawn_paid},
    x402::{PayOptions, now_unix},
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/agents/mary/call";

fn decode_header(r: &reqwest::Response, name: &str) -> Value {
    let raw = r
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("{name} header"))
        .to_str()
        .expect("ascii");
    serde_json::from_slice(&STANDARD.decode(raw).expect("base64")).expect("json")
}

#[tokio::test]
async fn a_paid_call_settles_once_and_returns_a_schema_valid_envelope() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("diagnose_growth");
    let r = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(r.status(), 200);
    let settlement = decode_header(&r, "payment-response");
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(settlement["payer"], format!("{:#x}", rig.wallet.address()));
    assert!(
        settlement["transaction"]
            .as_str()
            .is_some_and(|t| t.starts_with("0x"))
    );
    assert!(r.headers().get("idempotent-replay").is_none());
    let envelope: Value = r.json().await.expect("json");

    let schema = compile(
        &rig.app
            .get_json("/api/v1/schemas/diagnose_growth/response.json")
            .await,
    );
    let errors: Vec<String> = schema
        .iter_errors(&envelope)
        .map(|e| format!("{} {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(envelope["agent"], "mary");
    assert_eq!(envelope["mode"], "diagnose_growth");
    assert!(envelope.get("sandbox").is_none());
    let (i, o) = FakeLlm::usage_per_call();
    assert_eq!(
        envelope["usage"],
        json!({"input_tokens": i, "output_tokens": o})
    );
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.llm.received(), 1);

    // The facilitator got the exact requirements we offered and the payload we were sent.
    let settle = &rig.facilitator.requests()[0];
    assert_eq!(settle["x402Version"], 2);
    assert_eq!(settle["paymentRequirements"]["amount"], "180000");
    assert_eq!(
        settle["paymentPayload"]["payload"]["authorization"]["from"]
            .as_str()
            .map(str::to_lowercase),
        Some(format!("{:#x}", rig.wallet.address()))
    );

    // The model was asked with a strict schema and the coach's prompt.
    let asked = &rig.llm.bodies()[0];
    assert_eq!(asked["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        asked["response_format"]["json_schema"]["name"],
        "grove_diagnose_growth"
    );

    // The receipt fetches the same result.
    let receipt_url = envelope["receipt"]["url"].as_str().expect("receipt url");
    let receipt = rig.app.get_json(receipt_url).await;
    assert_eq!(receipt["status"], "completed");
    assert_eq!(receipt["kind"], "coaching");
    assert_eq!(receipt["amount_usd"], "0.18");
    assert_eq!(receipt["network"], "eip155:8453");
    assert_eq!(receipt["payer"], format!("{:#x}", rig.wallet.address()));
    assert_eq!(receipt["result"], envelope);
    assert_eq!(envelope["receipt"]["id"].as_str().map(str::len), Some(32));
}

#[tokio::test]
async fn an_identical_retry_replays_without_settling_or_calling_the_model() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("design_offer");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let first = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(first.status(), 200);
    let first_body: Value = first.json().await.expect("json");
    // Same payment header, same body: a plain retry.
    let again = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replay"], "true");
    assert!(again.headers().get("payment-response").is_some());
    assert_eq!(again.json::<Value>().await.expect("json"), first_body);
    // A fresh authorization for the same body within the window also replays, paying nothing.
    let fresh = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let third = rig.send_paid(PATH, &body, &fresh, None).await;
    assert_eq!(third.status(), 200);
    assert_eq!(third.headers()["idempotent-replay"], "true");
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn keyed_requests_replay_for_the_same_body_and_refuse_a_different_one() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("diagnose_growth");
    let first = rig.pay_and_call(PATH, &body, Some("order-1")).await;
    assert_eq!(first.status(), 200);
    let replay = rig.pay_and_call(PATH, &body, Some("order-1")).await;
    assert_eq!(replay.headers()["idempotent-replay"], "true");

    let mut other = body.clone();
    other["messages"][0]["content"] = json!("A different question entirely, with 12 leads.");
    let clash = rig.pay_and_call(PATH, &other, Some("order-1")).await;
    assert_eq!(clash.status(), 422);
    assert_eq!(
        clash.json::<Value>().await.expect("json")["error"]["code"],
        "idempotency_key_reused"
    );
    assert_eq!(
        rig.facilitator.settle_calls(),
        1,
        "the refused request was not charged"
    );

    // Keyed and keyless records are separate: the same body without a key is a new purchase.
    let keyless = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(keyless.status(), 200);
    assert!(keyless.headers().get("idempotent-replay").is_none());
    assert_eq!(rig.facilitator.settle_calls(), 2);
}

#[tokio::test]
async fn idempotency_windows_end_and_a_later_identical_request_is_a_new_purchase() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("design_offer");
    let is_replay = |r: &reqwest::Response| r.headers().get("idempotent-replay").is_some();

    // Without a key the window is 10 minutes.
    assert_eq!(rig.pay_and_call(PATH, &body, None).await.status(), 200);
    rig.clock.advance(TimeDelta::minutes(9));
    assert!(is_replay(&rig.pay_and_call(PATH, &body, None).await));
    rig.clock.advance(TimeDelta::minutes(2));
    let later = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(later.status(), 200);
    assert!(!is_replay(&later), "past 10 minutes it is a new purchase");
    assert_eq!(rig.facilitator.settle_calls(), 2);

    // With a key it is 24 hours.
    assert_eq!(
        rig.pay_and_call(PATH, &body, Some("weekly-1"))
            .await
            .status(),
        200
    );
    rig.clock.advance(TimeDelta::hours(23));
    assert!(is_replay(
        &rig.pay_and_call(PATH, &body, Some("weekly-1")).await
    ));
    rig.clock.advance(TimeDelta::hours(2));
    let next_day = rig.pay_and_call(PATH, &body, Some("weekly-1")).await;
    assert_eq!(next_day.status(), 200);
    assert!(!is_replay(&next_day), "past 24 hours the key is free again");
    assert_eq!(rig.facilitator.settle_calls(), 4);
    assert_eq!(rig.llm.received(), 4);
}

#[tokio::test]
async fn one_authorization_cannot_pay_for_two_requests() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    assert_eq!(
        rig.send_paid(PATH, &body, &payment, None).await.status(),
        200
    );
    // Another request the fake model's answer fits (the same question, told apart).
    let mut other = body.clone();
    let text = body["messages"][0]["content"].as_str().unwrap_or_default();
    other["messages"][0]["content"] = json!(format!("{text} (asked again)"));
    let reused = rig.send_paid(PATH, &other, &payment, None).await;
    assert_eq!(reused.status(), 402);
    assert!(reused.headers().get("payment-required").is_some());
    assert_eq!(
        reused.json::<Value>().await.expect("json")["error"],
        "payment_already_used"
    );
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.llm.received(), 1);
    // The refused claim kept nothing (on PostgreSQL its statement raised, undoing the scope it
    // took): the same body with an authorization of its own is bought.
    let fresh = rig.payment_for(PATH, &other, PayOptions::default()).await;
    assert_eq!(
        rig.send_paid(PATH, &other, &fresh, None).await.status(),
        200
    );
    assert_eq!(rig.facilitator.settle_calls(), 2);
    assert_eq!(rig.llm.received(), 2);
}

#[tokio::test]
async fn forged_payments_are_refused_before_any_money_moves() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("diagnose_growth");
    let cases: Vec<(&str, PayOptions, &str)> = vec![
        (
            "forged signature",
            PayOptions {
                corrupt_signature: true,
                ..Default::default()
            },
            "payment_invalid:",
        ),
        (
            "signed by another key",
            PayOptions {
                sign_with_other_key: true,
                ..Default::default()
            },
            "payment_invalid:",
        ),
        (
            "wrong amount",
            PayOptions {
                value: Some("1".into()),
                ..Default::default()
            },
            "payment_invalid:wrong_amount",
        ),
        (
            "wrong payTo",
            PayOptions {
                to: Some(rig.wallet.address()),
                ..Default::default()
            },
            "payment_invalid:wrong_pay_to",
        ),
        (
            "expired",
            PayOptions {
                valid_before: Some(now_unix() - 10),
                ..Default::default()
            },
            "payment_invalid:expired",
        ),
        (
            "wrong domain name",
            PayOptions {
                domain_name: Some("USDC".into()),
                ..Default::default()
            },
            "payment_invalid:",
        ),
    ];
    for (what, opts, expected) in cases {
        let payment = rig.payment_for(PATH, &body, opts).await;
        let r = rig.send_paid(PATH, &body, &payment, None).await;
        assert_eq!(r.status(), 402, "{what}");
        assert!(r.headers().get("payment-required").is_some(), "{what}");
        let error = r.json::<Value>().await.expect("json")["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.starts_with(expected), "{what}: {error}");
    }
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert_eq!(rig.llm.received(), 0);
    let metrics = rig.app.metrics().await;
    assert!(
        metrics.contains("grove_payment_refusals_total{reason=\"expired\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn x402_v1_clients_pay_with_x_payment_and_get_x_payment_response() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("funnel_review");
    let path = "/api/v1/agents/iris/call";
    let unpaid = rig.app.post_json(path, &body, &[]).await;
    let v1: Value = unpaid.json().await.expect("json");
    let payment = rig.wallet.pay_v1(&v1, PayOptions::default());
    let r = rig
        .app
        .post_json(path, &body, &[("x-payment", payment.as_str())])
        .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("payment-response").is_none());
    let settlement = decode_header(&r, "x-payment-response");
    assert_eq!(settlement["network"], "base");
    assert_eq!(rig.facilitator.requests()[0]["x402Version"], 1);
}

#[tokio::test]
async fn without_a_facilitator_payments_are_verified_locally_and_recorded_unsettled() {
    let rig = spawn_paid(Options {
        facilitator: false,
        ..Default::default()
    })
    .await;
    let r = rig
        .pay_and_call(PATH, &caller_body("diagnose_growth"), None)
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(decode_header(&r, "payment-response")["transaction"], "");
    let envelope: Value = r.json().await.expect("json");
    let receipt = rig
        .app
        .get_json(envelope["receipt"]["url"].as_str().expect("url"))
        .await;
    assert_eq!(receipt["transaction"], Value::Null);
    assert_eq!(rig.facilitator.settle_calls(), 0);
}

#[tokio::test]
async fn unknown_receipts_are_404() {
    let rig = spawn_paid(Options::default()).await;
    for id in ["0123456789abcdef0123456789abcdef", "nope", "sandbox"] {
        assert_eq!(
            rig.app
                .get(&format!("/api/v1/receipts/{id}"))
                .await
                .status(),
            404,
            "{id}"
        );
    }
}

#[tokio::test]
async fn readiness_checks_database_and_queue_and_metrics_count_calls() {
    let rig = spawn_paid(Options::default()).await;
    let ready = rig.app.get_json("/readyz").await;
    assert_eq!(ready["checks"], json!({"database": "ok", "queue": "ok"}));
    assert_eq!(
        rig.pay_and_call(PATH, &caller_body("diagnose_growth"), None)
            .await
            .status(),
        200
    );
    let metrics = rig.app.metrics().await;
    assert!(
        metrics.contains("grove_calls_total{mode=\"diagnose_growth\",outcome=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("grove_settlements_total{result=\"settled\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("grove_job_latency_seconds_count 1"),
        "{metrics}"
    );
}
