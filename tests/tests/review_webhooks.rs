//! Twilio's webhooks are applied exactly once (issue 10): the receipt that dedupes a report or an
//! inbound message is written in one transaction with everything it changes. A replay, however
//! validly signed, changes nothing; a handler that fails half-way keeps no receipt, so Twilio's
//! retry of a STOP is still honoured; a report that finds no message yet is not used up.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    db::inject,
    paid::{Options, PaidApp, TWILIO_TOKEN, spawn_paid},
    twilio::{InboundSms, StatusCallback, TwilioReply, sign_webhook},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};
use std::time::Duration;

const PATH: &str = "/api/v1/actions/review-request/call";
const STATUS: &str = "/webhooks/sms/status";
const INBOUND: &str = "/webhooks/sms/inbound";

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
    b["follow_up"] = json!({"enabled": true, "after_hours": 24});
    b
}

/// Pays for a request to `phone`; its id and the sid Twilio gave its text.
async fn sent_request(rig: &PaidApp, phone: &str) -> (String, String) {
    let r = rig.pay_and_call(PATH, &body_for(rig, phone), None).await;
    assert_eq!(r.status(), 200);
    let id = r.json::<Value>().await.expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let sid = rig
        .twilio
        .messages()
        .into_iter()
        .rev()
        .find(|m| m.field("To") == Some(phone))
        .and_then(|m| m.sid)
        .expect("a text to the phone");
    (id, sid)
}

/// Posts a signed webhook; its status.
async fn post(rig: &PaidApp, path: &str, params: &[(String, String)]) -> u16 {
    let url = format!("{}{path}", grove_tests::BASE_URL);
    rig.app
        .client
        .post(rig.app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .header(
            "x-twilio-signature",
            sign_webhook(TWILIO_TOKEN, &url, params),
        )
        .body(serde_urlencoded::to_string(params).expect("form"))
        .send()
        .await
        .expect("webhook reaches the server")
        .status()
        .as_u16()
}

async fn view(rig: &PaidApp, id: &str) -> Value {
    rig.app
        .get_json(&format!("/api/v1/actions/review-request/requests/{id}"))
        .await
}

/// Whether a new request to `phone` is offered (402) or refused as opted out (409).
async fn offered(rig: &PaidApp, phone: &str) -> u16 {
    rig.app
        .post_json(PATH, &body_for(rig, phone), &[])
        .await
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_replayed_21610_after_a_start_does_not_suppress_the_phone_again() {
    let rig = rig().await;
    let phone = "+13125550181";
    let (id, sid) = sent_request(&rig, phone).await;
    let opted_out = StatusCallback::new(&sid, phone, "undelivered")
        .error_code(21610)
        .params();
    assert_eq!(post(&rig, STATUS, &opted_out).await, 200);
    assert_eq!(view(&rig, &id).await["status"], "opted_out");
    assert_eq!(offered(&rig, phone).await, 409);
    assert_eq!(
        post(&rig, INBOUND, &InboundSms::new(phone, "START").params()).await,
        200
    );
    assert_eq!(offered(&rig, phone).await, 402);
    // The old signed report, posted again.
    assert_eq!(post(&rig, STATUS, &opted_out).await, 200);
    assert_eq!(
        offered(&rig, phone).await,
        402,
        "the replay did not suppress the phone"
    );
}

#[tokio::test]
async fn a_21610_report_ends_every_open_request_to_the_phone() {
    let rig = rig().await;
    let phone = "+13125550183";
    let (first, sid) = sent_request(&rig, phone).await;
    // A second request to the same phone (another customer record), sent as well.
    let mut body = body_for(&rig, phone);
    body["customer"]["first_name"] = json!("Sam");
    let r = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(r.status(), 200);
    let second = r.json::<Value>().await.expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(view(&rig, &second).await["status"], "sent");
    let opted_out = StatusCallback::new(&sid, phone, "undelivered")
        .error_code(21610)
        .params();
    assert_eq!(post(&rig, STATUS, &opted_out).await, 200);
    // The phone opted out: no request to it may text again, as when a send is refused 21610.
    assert_eq!(view(&rig, &first).await["status"], "opted_out");
    assert_eq!(view(&rig, &second).await["status"], "opted_out");
    assert_eq!(offered(&rig, phone).await, 409);
}

#[tokio::test]
async fn a_replayed_delivery_report_changes_nothing() {
    let rig = rig().await;
    let phone = "+13125550182";
    let (id, sid) = sent_request(&rig, phone).await;
    let delivered = StatusCallback::new(&sid, phone, "delivered").params();
    assert_eq!(post(&rig, STATUS, &delivered).await, 200);
    let before = view(&rig, &id).await;
    assert_eq!(before["status"], "follow_up_scheduled", "{before}");
    assert_eq!(post(&rig, STATUS, &delivered).await, 200);
    let after = view(&rig, &id).await;
    assert_eq!(after, before, "the replay changed the request");
}

#[tokio::test]
async fn a_stop_whose_handling_failed_is_honoured_when_twilio_retries_it() {
    let rig = rig().await;
    let phone = "+13125550183";
    let (id, _) = sent_request(&rig, phone).await;
    let stop = InboundSms::new(phone, "STOP").params();
    inject::fail_inserts(&rig.db.url, "suppressions").await;
    assert_eq!(
        post(&rig, INBOUND, &stop).await,
        500,
        "the failure is reported, so Twilio retries"
    );
    inject::heal(&rig.db.url, "suppressions").await;
    assert_eq!(view(&rig, &id).await["status"], "sent", "nothing half-done");
    // Twilio's retry of the same message (same MessageSid).
    assert_eq!(post(&rig, INBOUND, &stop).await, 200);
    assert_eq!(view(&rig, &id).await["status"], "opted_out");
    assert_eq!(offered(&rig, phone).await, 409, "the STOP was not lost");
}

#[tokio::test]
async fn a_report_that_finds_no_message_yet_is_applied_when_it_comes_again() {
    let rig = rig().await;
    let phone = "+13125550184";
    rig.twilio
        .script([TwilioReply::Slow(Duration::from_secs(2))]);
    let body = body_for(&rig, phone);
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let call = rig.spawn_paid_call(PATH, &body, &payment);
    wait_until("the send to reach Twilio", async || rig.twilio.sends() == 1).await;
    let sid = rig.twilio.messages()[0].sid.clone().expect("sid");
    // Posted to the number's own status URL (no message id in it), before we know the sid.
    let delivered = StatusCallback::new(&sid, phone, "delivered").params();
    assert_eq!(post(&rig, STATUS, &delivered).await, 200);
    let response = call.await.expect("task").expect("response");
    assert_eq!(response.status(), 200);
    let id = response.json::<Value>().await.expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(view(&rig, &id).await["status"], "sent");
    // The same report again (Twilio's retry): now it lands.
    assert_eq!(post(&rig, STATUS, &delivered).await, 200);
    let v = view(&rig, &id).await;
    assert_eq!(v["status"], "follow_up_scheduled", "{v}");
    assert_eq!(v["messages"][0]["status"], "delivered", "{v}");
}
