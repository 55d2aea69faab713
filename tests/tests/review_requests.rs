//! The review-request action end to end (CONTRACT 9): consent and opt-out checks before any
//! 402, one SMS per paid request through a loopback Twilio, signed webhooks, quiet hours on a
//! controllable clock, the follow-up, clicks, and forward-only state.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    facilitator::SettleScript,
    paid::{Options, PaidApp, TWILIO_TOKEN, spawn_paid},
    twilio::{InboundSms, Received, StatusCallback, sign_webhook},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};
use std::time::Duration;

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

/// A request for `phone` whose consent is a month old by the rig's clock.
fn body_for(rig: &PaidApp, phone: &str) -> Value {
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] = json!((rig.clock.now() - Days::days(30)).to_rfc3339());
    b["follow_up"] = json!({"enabled": true, "after_hours": 24});
    b
}

/// Pays for a review request to `phone`; returns the tracked request's id.
async fn paid_review_request(rig: &PaidApp, phone: &str) -> String {
    let tracked: Value = rig
        .pay_and_call(PATH, &body_for(rig, phone), None)
        .await
        .json()
        .await
        .expect("json");
    tracked["id"].as_str().expect("id").to_owned()
}

/// One figure of the embedded sweeper from `/metrics`.
async fn sweeper_metric(rig: &PaidApp, name: &str) -> i64 {
    let text = rig
        .app
        .client
        .get(rig.app.admin_url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
}

/// Waits for a sweeper pass that read the rig's clock at its current time, and returns how
/// many due jobs the sweeper pushed meanwhile. A negative check waits for this, not a pause.
async fn sweep_at_the_rig_time(rig: &PaidApp) -> i64 {
    let at = rig.clock.now().timestamp();
    let before = sweeper_metric(rig, "grove_review_sweep_actions_total").await;
    wait_until("a sweeper pass at the rig's time", async || {
        sweeper_metric(rig, "grove_review_sweep_last_success_timestamp_seconds").await >= at
    })
    .await;
    sweeper_metric(rig, "grove_review_sweep_actions_total").await - before
}

/// Messages the fake Twilio accepted (refused sends are recorded too, without a sid).
fn sent(rig: &PaidApp) -> Vec<Received> {
    rig.twilio
        .messages()
        .into_iter()
        .filter(|m| m.sid.is_some())
        .collect()
}

fn field(m: &Received, name: &str) -> String {
    m.field(name).unwrap_or_default().to_owned()
}

fn status_form(sid: &str, status: &str, code: Option<u32>) -> Vec<(String, String)> {
    let cb = StatusCallback::new(sid, "+13125550100", status);
    match code {
        Some(c) => cb.error_code(c).params(),
        None => cb.params(),
    }
}

fn inbound_form(from: &str, body: &str) -> Vec<(String, String)> {
    InboundSms::new(from, body).params()
}

/// A request inside the phone's cooldown: refused 409 `cooldown_active`, before any payment.
async fn refused_cooldown(rig: &PaidApp, body: &Value, why: &str) {
    let r = rig.app.post_json(PATH, body, &[]).await;
    assert_eq!(r.status(), 409, "{why}");
    assert!(r.headers().get("payment-required").is_none(), "{why}");
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"]["code"],
        "cooldown_active",
        "{why}"
    );
}

async fn status_of(rig: &PaidApp, id: &str) -> Value {
    rig.app
        .get_json(&format!("/api/v1/actions/review-request/requests/{id}"))
        .await
}

async fn post_webhook(
    rig: &PaidApp,
    path: &str,
    params: &[(String, String)],
    signature: Option<&str>,
) -> reqwest::Response {
    let url = format!("{}{path}", grove_tests::BASE_URL);
    let sig = signature
        .map(str::to_owned)
        .unwrap_or_else(|| sign_webhook(TWILIO_TOKEN, &url, params));
    rig.app
        .client
        .post(rig.app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-twilio-signature", sig)
        .body(serde_urlencoded::to_string(params).expect("form"))
        .send()
        .await
        .expect("webhook reaches the server")
}

#[tokio::test]
async fn a_paid_request_sends_exactly_one_message_with_the_right_body() {
    let rig = rig().await;
    let body = body_for(&rig, "+13125550142");
    let r = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("payment-response").is_some());
    let tracked: Value = r.json().await.expect("json");
    let schema = grove_tests::compile(
        &rig.app
            .get_json("/api/v1/schemas/actions/review_request/response.json")
            .await,
    );
    assert!(schema.is_valid(&tracked), "{tracked}");
    assert_eq!(tracked["status"], "sent");
    let id = tracked["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("rr_"));

    let sent = sent(&rig);
    assert_eq!(sent.len(), 1);
    let text = field(&sent[0], "Body");
    let text = text.as_str();
    assert_eq!(field(&sent[0], "To"), "+13125550142");
    assert!(
        text.contains("Harbor Physio") && text.contains("Dana"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}/r/", grove_tests::BASE_URL)),
        "tracked link: {text}"
    );
    assert!(
        text.to_lowercase().contains("stop"),
        "opt-out sentence: {text}"
    );
    assert_eq!(tracked["message"]["body"], text);
    assert_eq!(tracked["message"]["encoding"], "GSM-7");
    assert!(
        field(&sent[0], "StatusCallback")
            .starts_with(&format!("{}/webhooks/sms/status?m=", grove_tests::BASE_URL))
    );
    assert!(!field(&sent[0], "ValidityPeriod").is_empty());

    let view = status_of(&rig, &id).await;
    assert_eq!(view["status"], "sent");
    let masked = view["recipient"]["phone"].as_str().expect("masked");
    assert!(!masked.contains("5550142"), "phone is masked: {masked}");
    assert_eq!(view["messages"].as_array().map(Vec::len), Some(1));
    assert!(view["events"].as_array().is_some_and(|e| e.len() >= 2));
}

#[tokio::test]
async fn retries_never_send_twice_but_a_distinct_key_sends_again() {
    let rig = rig().await;
    let body = body_for(&rig, "+13125550143");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let first = rig.send_paid(PATH, &body, &payment, Some("visit-1")).await;
    assert_eq!(first.status(), 200);
    let again = rig.send_paid(PATH, &body, &payment, Some("visit-1")).await;
    assert_eq!(again.headers()["idempotent-replay"], "true");
    let keyless_a = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(keyless_a.status(), 200);
    // Past the keyless window of a coaching call (10 minutes): an action's is the keyed one.
    rig.clock.set(rig.clock.now() + Days::minutes(11));
    let keyless_b = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(
        keyless_b.headers()["idempotent-replay"],
        "true",
        "a keyless identical retry replays for 24 h"
    );
    assert_eq!(
        sent(&rig).len(),
        2,
        "one for the keyed request, one for the keyless one"
    );

    let second = rig.pay_and_call(PATH, &body, Some("visit-2")).await;
    assert_eq!(second.status(), 200);
    assert_eq!(
        sent(&rig).len(),
        3,
        "a distinct key is a genuine second send"
    );
}

#[tokio::test]
async fn refusals_come_before_any_payment() {
    let rig = rig().await;
    let now = rig.clock.now();
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "consent in the future",
            json!({"consent": {"captured_at": (now + Days::days(2)).to_rfc3339()}}),
            422,
            "consent_invalid",
        ),
        (
            "consent too old",
            json!({"consent": {"captured_at": (now - Days::days(600)).to_rfc3339()}}),
            422,
            "consent_invalid",
        ),
        (
            "unknown consent method",
            json!({"consent": {"method": "telepathy"}}),
            422,
            "consent_invalid",
        ),
        (
            "link shortener",
            json!({"business": {"review_url": "https://bit.ly/abc123"}}),
            422,
            "validation_failed",
        ),
        (
            "non-US number",
            json!({"customer": {"phone": "+447700900123"}}),
            422,
            "validation_failed",
        ),
    ];
    for (what, patch, status, code) in cases {
        let mut body = body_for(&rig, "+13125550144");
        merge(&mut body, &patch);
        let r = rig.app.post_json(PATH, &body, &[]).await;
        assert_eq!(r.status(), status, "{what}");
        assert!(
            r.headers().get("payment-required").is_none(),
            "{what}: never offered for sale"
        );
        assert_eq!(
            r.json::<Value>().await.expect("json")["error"]["code"],
            code,
            "{what}"
        );
    }
    // Cooldown: a second request to the same phone within the window is refused unpaid.
    let body = body_for(&rig, "+13125550145");
    assert_eq!(rig.pay_and_call(PATH, &body, None).await.status(), 200);
    let mut again = body_for(&rig, "+13125550145");
    again["min_days_since_last_request"] = json!(30);
    refused_cooldown(&rig, &again, "inside the cooldown").await;
    assert_eq!(rig.facilitator.settle_calls(), 1);
}

/// A refused settlement gives back the cooldown mark its sale took, in the refusal's own write
/// and once: a later request inside the cooldown is sold, and a mark an earlier sale left stays
/// (given back twice, the second would drop it).
#[tokio::test]
async fn a_refused_settlement_gives_the_phone_mark_back_once() {
    let rig = rig().await;
    let cooling = |phone: &str| {
        let mut b = body_for(&rig, phone);
        b["min_days_since_last_request"] = json!(30);
        b
    };
    let refuse_next = || {
        rig.facilitator
            .script_next(SettleScript::RefuseWith200("insufficient_funds"))
    };
    // A phone never sold: the refused sale leaves no mark behind.
    let fresh = "+13125550160";
    refuse_next();
    let r = rig.pay_and_call(PATH, &cooling(fresh), None).await;
    assert_eq!(r.status(), 402, "the settlement was refused");
    let r = rig.pay_and_call(PATH, &cooling(fresh), None).await;
    assert_eq!(r.status(), 200, "the refused sale's mark went back");
    // A phone sold before: a refused sale over its mark (no cooldown asked) hands that mark back.
    let sold = "+13125550161";
    assert_eq!(
        rig.pay_and_call(PATH, &body_for(&rig, sold), None)
            .await
            .status(),
        200
    );
    refuse_next();
    // Another body (an identical one would replay the first sale's result).
    let mut over = body_for(&rig, sold);
    over["customer"]["first_name"] = json!("Sam");
    let r = rig.pay_and_call(PATH, &over, None).await;
    assert_eq!(r.status(), 402, "the settlement was refused");
    refused_cooldown(&rig, &cooling(sold), "the first sale's mark stands").await;
    assert_eq!(rig.facilitator.transfers(), 2, "two sales moved money");
    assert_eq!(sent(&rig).len(), 2, "one text per sale");
}

fn merge(into: &mut Value, patch: &Value) {
    if let (Some(a), Some(b)) = (into.as_object_mut(), patch.as_object()) {
        for (k, v) in b {
            if v.is_object() && a.get(k).is_some_and(Value::is_object) {
                merge(a.get_mut(k).expect("present"), v);
            } else {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

#[tokio::test]
async fn stop_opts_out_and_the_next_request_is_refused_before_payment() {
    let rig = rig().await;
    let phone = "+13125550146";
    let id = paid_review_request(&rig, phone).await;

    // A forged signature changes nothing.
    let form = inbound_form(phone, "STOP");
    let forged = post_webhook(
        &rig,
        "/webhooks/sms/inbound",
        &form,
        Some("bm90IGEgc2lnbmF0dXJl"),
    )
    .await;
    assert_eq!(forged.status(), 403);
    assert_eq!(status_of(&rig, &id).await["status"], "sent");

    let r = post_webhook(&rig, "/webhooks/sms/inbound", &form, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(status_of(&rig, &id).await["status"], "opted_out");
    let refused = rig.app.post_json(PATH, &body_for(&rig, phone), &[]).await;
    assert_eq!(refused.status(), 409);
    assert!(refused.headers().get("payment-required").is_none());
    assert_eq!(
        refused.json::<Value>().await.expect("json")["error"]["code"],
        "recipient_opted_out"
    );

    // START lifts it for future requests.
    let r = post_webhook(
        &rig,
        "/webhooks/sms/inbound",
        &inbound_form(phone, " start "),
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        rig.app
            .post_json(PATH, &body_for(&rig, phone), &[])
            .await
            .status(),
        402
    );
}

#[tokio::test]
async fn a_florida_number_at_2030_local_is_deferred_to_the_next_opening() {
    // 20:30 in Miami (EST, UTC-5) on Monday 2026-11-16 is 01:30 UTC on the 17th.
    let at = Utc
        .with_ymd_and_hms(2026, 11, 17, 1, 30, 0)
        .single()
        .expect("instant");
    let rig = spawn_paid(Options {
        twilio: true,
        clock_at: Some(at),
        ..Default::default()
    })
    .await;
    let mut body = body_for(&rig, "+13055550147");
    body["business"]["timezone"] = json!("America/New_York");
    let tracked: Value = rig
        .pay_and_call(PATH, &body, None)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(tracked["status"], "deferred_quiet_hours");
    // Florida allows 08:00-20:00: the next opening is 08:00 local on the 17th = 13:00 UTC.
    assert_eq!(tracked["scheduled_send_at"], "2026-11-17T13:00:00Z");
    assert!(sent(&rig).is_empty());

    // Just before the opening nothing goes out; at the opening the sweeper sends it.
    rig.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 17, 12, 59, 0)
            .single()
            .expect("instant"),
    );
    assert_eq!(sweep_at_the_rig_time(&rig).await, 0, "nothing is due yet");
    assert!(sent(&rig).is_empty());
    rig.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 17, 13, 0, 5)
            .single()
            .expect("instant"),
    );
    wait_until("the deferred send", async || sent(&rig).len() == 1).await;
    let id = tracked["id"].as_str().expect("id");
    wait_until("status sent", async || {
        status_of(&rig, id).await["status"] == "sent"
    })
    .await;
}

#[tokio::test]
async fn the_follow_up_goes_out_after_delivery_plus_the_delay() {
    let rig = rig().await;
    let id = paid_review_request(&rig, "+13125550148").await;
    let sid = sent(&rig)[0].sid.clone().expect("sid");
    let r = post_webhook(
        &rig,
        "/webhooks/sms/status",
        &status_form(&sid, "delivered", None),
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    let view = status_of(&rig, &id).await;
    assert_eq!(view["status"], "follow_up_scheduled");
    assert_eq!(view["follow_up"]["due_at"], "2026-11-17T20:00:00Z");

    rig.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 17, 19, 59, 0)
            .single()
            .expect("instant"),
    );
    assert_eq!(sweep_at_the_rig_time(&rig).await, 0, "nothing is due yet");
    assert_eq!(sent(&rig).len(), 1);
    rig.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 17, 20, 0, 5)
            .single()
            .expect("instant"),
    );
    wait_until("the follow-up", async || sent(&rig).len() == 2).await;
    wait_until("follow_up_sent", async || {
        status_of(&rig, &id).await["status"] == "follow_up_sent"
    })
    .await;
}

#[tokio::test]
async fn a_click_or_a_stop_cancels_the_pending_follow_up() {
    let rig = rig().await;
    let mut ids = Vec::new();
    for phone in ["+13125550149", "+13125550150"] {
        let tracked: Value = rig
            .pay_and_call(PATH, &body_for(&rig, phone), None)
            .await
            .json()
            .await
            .expect("json");
        ids.push(tracked["id"].as_str().expect("id").to_owned());
    }
    for m in sent(&rig) {
        let sid = m.sid.clone().expect("sid");
        assert_eq!(
            post_webhook(
                &rig,
                "/webhooks/sms/status",
                &status_form(&sid, "delivered", None),
                None
            )
            .await
            .status(),
            200
        );
    }
    // First customer clicks the link: 302 to the review page, request complete.
    let first = sent(&rig)
        .into_iter()
        .find(|m| m.field("To") == Some("+13125550149"))
        .expect("first customer's message");
    let link = field(&first, "Body")
        .split_whitespace()
        .find(|w| w.contains("/r/"))
        .expect("link")
        .to_owned();
    let path = link
        .trim_start_matches(grove_tests::BASE_URL)
        .trim_end_matches(['.', ','])
        .to_owned();
    let no_redirect = grove_common::http_client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .expect("client");
    let click = no_redirect
        .get(rig.app.url(&path))
        .send()
        .await
        .expect("click");
    assert_eq!(click.status(), 302);
    assert_eq!(click.headers()["location"], "https://example.com/review");
    assert_eq!(status_of(&rig, &ids[0]).await["status"], "completed");
    // Second customer replies STOP.
    let r = post_webhook(
        &rig,
        "/webhooks/sms/inbound",
        &inbound_form("+13125550150", "Stop"),
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(status_of(&rig, &ids[1]).await["status"], "opted_out");

    rig.clock.set(rig.clock.now() + Days::hours(30));
    assert_eq!(sweep_at_the_rig_time(&rig).await, 0, "nothing is due yet");
    assert_eq!(sent(&rig).len(), 2, "no follow-up after a click or a STOP");
}

#[tokio::test]
async fn duplicate_and_late_status_callbacks_change_nothing() {
    let rig = rig().await;
    let id = paid_review_request(&rig, "+13125550151").await;
    let sid = sent(&rig)[0].sid.clone().expect("sid");
    for s in ["delivered", "delivered", "sent", "queued"] {
        assert_eq!(
            post_webhook(
                &rig,
                "/webhooks/sms/status",
                &status_form(&sid, s, None),
                None
            )
            .await
            .status(),
            200
        );
    }
    let view = status_of(&rig, &id).await;
    assert_eq!(view["status"], "follow_up_scheduled");
    let history: Vec<String> = view["messages"][0]["status_history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|h| h["status"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        history.iter().filter(|s| *s == "delivered").count(),
        1,
        "{history:?}"
    );
    assert_eq!(
        history.last().map(String::as_str),
        Some("delivered"),
        "{history:?}"
    );
    let delivered_events = view["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "delivered")
        .count();
    assert_eq!(delivered_events, 1);
    // A forged status callback is refused and changes nothing.
    let forged = post_webhook(
        &rig,
        "/webhooks/sms/status",
        &status_form(&sid, "failed", Some(30008)),
        Some("AAAA"),
    )
    .await;
    assert_eq!(forged.status(), 403);
    assert_eq!(status_of(&rig, &id).await["status"], "follow_up_scheduled");
}

#[tokio::test]
async fn provider_errors_map_to_request_states() {
    let rig = rig().await;
    rig.twilio
        .script([grove_tests::twilio::TwilioReply::OptedOut]);
    let opted: Value = rig
        .pay_and_call(PATH, &body_for(&rig, "+13125550152"), None)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(opted["status"], "opted_out");
    let refused = rig
        .app
        .post_json(PATH, &body_for(&rig, "+13125550152"), &[])
        .await;
    assert_eq!(refused.status(), 409, "21610 suppresses the phone");
    rig.twilio
        .script([grove_tests::twilio::TwilioReply::InvalidNumber]);
    let invalid: Value = rig
        .pay_and_call(PATH, &body_for(&rig, "+13125550153"), None)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(invalid["status"], "failed");
}

#[tokio::test]
async fn cancel_stops_a_scheduled_request() {
    let rig = rig().await;
    let mut body = body_for(&rig, "+13125550154");
    body["send_at"] = json!((rig.clock.now() + Days::days(2)).to_rfc3339());
    let tracked: Value = rig
        .pay_and_call(PATH, &body, None)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(tracked["status"], "scheduled");
    let id = tracked["id"].as_str().expect("id");
    let r = rig
        .app
        .client
        .post(rig.app.url(&format!(
            "/api/v1/actions/review-request/requests/{id}/cancel"
        )))
        .send()
        .await
        .expect("cancel");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.expect("json")["status"],
        "cancelled"
    );
    let again = rig
        .app
        .client
        .post(rig.app.url(&format!(
            "/api/v1/actions/review-request/requests/{id}/cancel"
        )))
        .send()
        .await
        .expect("cancel");
    assert_eq!(again.status(), 409);
    rig.clock.set(rig.clock.now() + Days::days(3));
    assert_eq!(sweep_at_the_rig_time(&rig).await, 0, "nothing is due yet");
    assert!(sent(&rig).is_empty(), "the cancelled request never sends");
    // Nothing was texted: the cancel gave the phone's cooldown mark back (in its own write), so
    // a request inside a 30-day cooldown is sold; its mark then stands against the next.
    let mut cooling = body_for(&rig, "+13125550154");
    cooling["min_days_since_last_request"] = json!(30);
    assert_eq!(rig.pay_and_call(PATH, &cooling, None).await.status(), 200);
    cooling["customer"]["first_name"] = json!("Sam");
    refused_cooldown(&rig, &cooling, "inside the cooldown").await;
    assert_eq!(rig.facilitator.transfers(), 2);
    assert_eq!(sent(&rig).len(), 1, "only the second request texted");
}

/// An IANA zone where it is early afternoon right now (the worker binary reads the real clock).
fn zone_at_midday() -> String {
    use chrono::Timelike;
    let hour = i64::from(Utc::now().hour());
    let mut offset = 13 - hour;
    if offset > 14 {
        offset -= 24;
    }
    if offset < -12 {
        offset += 24;
    }
    // POSIX sign convention: Etc/GMT-5 is five hours ahead of UTC.
    match offset {
        0 => "Etc/GMT".into(),
        o if o > 0 => format!("Etc/GMT-{o}"),
        o => format!("Etc/GMT+{}", -o),
    }
}

#[tokio::test]
async fn a_worker_killed_mid_send_never_sends_a_second_message() {
    let rig = spawn_paid(Options {
        twilio: true,
        deadline_s: 60,
        extra_env: vec![
            ("REDIS_URL".into(), grove_tests::paid::REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()),
        ],
        ..Default::default()
    })
    .await;
    let mut first = rig.start_worker_process();
    rig.twilio
        .script([grove_tests::twilio::TwilioReply::Slow(Duration::from_secs(
            4,
        ))]);
    let mut body = action_body();
    body["customer"]["phone"] = json!("+12125550155");
    body["customer"]["timezone"] = json!(zone_at_midday());
    body["consent"]["captured_at"] = json!((Utc::now() - Days::days(30)).to_rfc3339());
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let call = rig.spawn_paid_call(PATH, &body, &payment);
    wait_until("the send to reach Twilio", async || rig.twilio.sends() == 1).await;
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let mut second = rig.start_worker_process();
    let response = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("answered")
        .expect("task")
        .expect("response");
    let _ = second.kill();
    let _ = second.wait();
    assert_eq!(response.status(), 200);
    let tracked: Value = response.json().await.expect("json");
    assert_eq!(
        rig.twilio.sends(),
        1,
        "exactly one send reached the provider"
    );
    let id = tracked["id"].as_str().expect("id").to_owned();
    let view = status_of(&rig, &id).await;
    assert!(
        view["events"].to_string().contains("send_outcome_unknown"),
        "{view}"
    );

    // Twilio did take it: its report, sent to the callback URL that carries our message id,
    // puts the truth in the message's history, and the request goes on as if the send had
    // been recorded: delivered, so the follow-up is scheduled.
    let (sid, path) = reported_to(&rig);
    let r = post_webhook(&rig, &path, &status_form(&sid, "delivered", None), None).await;
    assert_eq!(r.status(), 200);
    let view = status_of(&rig, &id).await;
    assert_eq!(view["messages"][0]["status"], "delivered", "{view}");
    assert_eq!(view["status"], "follow_up_scheduled", "{view}");
    assert!(view["follow_up"]["due_at"].is_string(), "{view}");
    let events = view["events"].to_string();
    for kind in [
        "provider_reported_after_unknown",
        "send_outcome_recovered",
        "delivered",
    ] {
        assert!(events.contains(kind), "{kind}: {view}");
    }
    assert_eq!(
        events.matches("send_outcome_unknown").count(),
        1,
        "the unknown outcome is recorded once: {view}"
    );
    assert_eq!(rig.twilio.sends(), 1, "still exactly one text");
}

/// The sid Twilio gave the first accepted message, and the callback path (with its query) we
/// asked Twilio to report to.
fn reported_to(rig: &PaidApp) -> (String, String) {
    let first = sent(rig)
        .into_iter()
        .next()
        .expect("a message reached Twilio");
    let callback = field(&first, "StatusCallback");
    let path = callback
        .strip_prefix(grove_tests::BASE_URL)
        .expect("the callback is under PUBLIC_BASE_URL")
        .to_owned();
    assert!(path.starts_with("/webhooks/sms/status?m="), "{path}");
    (first.sid.expect("sid"), path)
}

#[tokio::test]
async fn a_delivery_report_that_beats_the_send_record_still_counts() {
    let rig = rig().await;
    rig.twilio
        .script([grove_tests::twilio::TwilioReply::Slow(Duration::from_secs(
            2,
        ))]);
    let body = body_for(&rig, "+13125550161");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let call = rig.spawn_paid_call(PATH, &body, &payment);
    // Twilio has the message but has not answered us yet: we do not know its sid.
    wait_until("the send to reach Twilio", async || rig.twilio.sends() == 1).await;
    let (sid, path) = reported_to(&rig);
    let r = post_webhook(&rig, &path, &status_form(&sid, "delivered", None), None).await;
    assert_eq!(r.status(), 200);

    let response = call.await.expect("task").expect("response");
    assert_eq!(response.status(), 200);
    let tracked: Value = response.json().await.expect("json");
    let view = status_of(&rig, tracked["id"].as_str().expect("id")).await;
    assert_eq!(view["messages"][0]["status"], "delivered", "{view}");
    assert_eq!(
        view["status"], "follow_up_scheduled",
        "delivery counted: the follow-up is scheduled"
    );
    assert_eq!(sent(&rig).len(), 1);
}
