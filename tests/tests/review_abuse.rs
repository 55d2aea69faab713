//! Review requests that cannot turn our number into a phishing or spam channel (issue 10): links,
//! control characters and look-alikes in what a business writes are refused before any 402; a
//! STOP in another sense does not replace the opt-out sentence; and of concurrent requests to one
//! phone inside a cooldown exactly one is sold and sent.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    paid::{Options, PaidApp, spawn_paid},
    x402::PayOptions,
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/actions/review-request/call";

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

async fn rig() -> PaidApp {
    spawn_paid(Options {
        twilio: true,
        clock_at: Some(monday_afternoon()),
        ..Default::default()
    })
    .await
}

fn body_for(rig: &PaidApp, phone: &str) -> Value {
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] = json!((rig.clock.now() - Days::days(30)).to_rfc3339());
    b
}

fn texts(rig: &PaidApp) -> Vec<String> {
    rig.twilio
        .messages()
        .into_iter()
        .filter(|m| m.sid.is_some())
        .map(|m| m.field("Body").unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn links_control_characters_and_look_alikes_are_refused_before_any_402() {
    let rig = rig().await;
    let cases = [
        (
            "/message/template",
            "URGENT {business_name}: your account is locked, verify at https://bit.ly/x9 now. NON STOP {review_link}",
            "shortener",
        ),
        (
            "/message/template",
            "{business_name} says hi\u{7} {review_link}",
            "control character",
        ),
        (
            "/message/template",
            "{business_name}: see \u{ff42}\u{ff49}\u{ff54}\u{ff0e}\u{ff4c}\u{ff59}/x9 {review_link}",
            "shortener",
        ),
        (
            "/message/template",
            "{business_name}: log in at g\u{43e}\u{43e}gle-secure dot com {review_link}",
            "alphabet",
        ),
        (
            "/message/template",
            "{business_name}: visit example . com {review_link}",
            "web address",
        ),
    ];
    for (path, template, needle) in cases {
        let mut body = body_for(&rig, "+13125550150");
        body["message"] = json!({"template": template});
        let r = rig.app.post_json(PATH, &body, &[]).await;
        assert_eq!(r.status(), 422, "{template}");
        assert!(r.headers().get("payment-required").is_none(), "never offered");
        let error = r.json::<Value>().await.expect("json")["error"].clone();
        let details = error["details"].as_array().cloned().unwrap_or_default();
        assert!(
            details
                .iter()
                .any(|d| d["path"] == path && d["message"].as_str().is_some_and(|m| m.contains(needle))),
            "{template}: {error}"
        );
    }
    // A link in a name is refused at the name's own path.
    let mut body = body_for(&rig, "+13125550150");
    body["business"]["name"] = json!("Acme (bit.ly/x9)");
    let r = rig.app.post_json(PATH, &body, &[]).await;
    assert_eq!(r.status(), 422);
    let error = r.json::<Value>().await.expect("json")["error"].clone();
    assert!(error["details"].as_array().is_some_and(|d| d.iter().any(|d| d["path"] == "/business/name")), "{error}");
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert!(texts(&rig).is_empty());
}

#[tokio::test]
async fn stop_in_another_sense_still_gets_the_opt_out_sentence() {
    let rig = rig().await;
    let mut body = body_for(&rig, "+13125550151");
    body["message"] = json!({"template": "{business_name}: NON STOP thanks, {first_name}! {review_link}"});
    let r = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(r.status(), 200);
    let sent = texts(&rig);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].ends_with("Reply STOP to opt out."), "{}", sent[0]);
}

#[tokio::test]
async fn concurrent_requests_to_one_phone_inside_a_cooldown_sell_and_send_exactly_one() {
    let rig = rig().await;
    let mut body = body_for(&rig, "+13125550152");
    body["min_days_since_last_request"] = json!(30);
    let mut payments = Vec::new();
    for _ in 0..5 {
        payments.push(rig.payment_for(PATH, &body, PayOptions::default()).await);
    }
    let keys: Vec<String> = (0..5).map(|i| format!("distinct-{i}")).collect();
    let sends = payments
        .iter()
        .zip(&keys)
        .map(|(p, k)| rig.send_paid(PATH, &body, p, Some(k)));
    let answers = futures::future::join_all(sends).await;
    let mut statuses = Vec::new();
    for r in answers {
        let status = r.status().as_u16();
        let answer: Value = r.json().await.expect("json");
        if status == 409 {
            assert_eq!(answer["error"]["code"], "cooldown_active", "{answer}");
        }
        statuses.push(status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409, 409, 409, 409], "exactly one is sold");
    assert_eq!(rig.facilitator.transfers(), 1, "one charge");
    assert_eq!(texts(&rig).len(), 1, "one text");
}
