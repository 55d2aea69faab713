//! Review requests that cannot turn our number into a phishing or spam channel (issue 10): links,
//! control characters and look-alikes in what a business writes are refused before any 402; a
//! STOP in another sense does not replace the opt-out sentence; and of concurrent requests to one
//! phone inside a cooldown exactly one is sold and sent.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    action_body,
    db::inject,
    paid::{Options, PaidApp, TWILIO_TOKEN, spawn_paid},
    twilio::{InboundSms, sign_webhook},
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
        // "аррӏе.сом", every letter Cyrillic.
        (
            "/message/template",
            "{business_name}: log in at \u{430}\u{440}\u{440}\u{4cf}\u{435}.\u{441}\u{43e}\u{43c} {review_link}",
            "look-alike",
        ),
        // A Cyrillic "ЅТОР": a reply copied from it would be no keyword.
        (
            "/message/template",
            "{business_name} {review_link} Reply \u{405}\u{422}\u{41e}\u{420} to opt out",
            "look-alike",
        ),
    ];
    for (path, template, needle) in cases {
        let mut body = body_for(&rig, "+13125550150");
        body["message"] = json!({"template": template});
        let r = rig.app.post_json(PATH, &body, &[]).await;
        assert_eq!(r.status(), 422, "{template}");
        assert!(
            r.headers().get("payment-required").is_none(),
            "never offered"
        );
        let error = r.json::<Value>().await.expect("json")["error"].clone();
        let details = error["details"].as_array().cloned().unwrap_or_default();
        assert!(
            details
                .iter()
                .any(|d| d["path"] == path
                    && d["message"].as_str().is_some_and(|m| m.contains(needle))),
            "{template}: {error}"
        );
    }
    // A link in a name is refused at the name's own path.
    let mut body = body_for(&rig, "+13125550150");
    body["business"]["name"] = json!("Acme (bit.ly/x9)");
    let r = rig.app.post_json(PATH, &body, &[]).await;
    assert_eq!(r.status(), 422);
    let error = r.json::<Value>().await.expect("json")["error"].clone();
    assert!(
        error["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["path"] == "/business/name")),
        "{error}"
    );
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert!(texts(&rig).is_empty());
}

#[tokio::test]
async fn stop_in_another_sense_still_gets_the_opt_out_sentence() {
    let rig = rig().await;
    for (n, template) in [
        "{business_name}: NON STOP thanks, {first_name}! {review_link}",
        "{business_name}: {review_link} Reply STOP to opt in",
        "{business_name}: {review_link} Reply STOP to cancel your booking",
    ]
    .into_iter()
    .enumerate()
    {
        let mut body = body_for(&rig, &format!("+1312555015{}", n + 1));
        body["message"] = json!({ "template": template });
        let r = rig.pay_and_call(PATH, &body, None).await;
        assert_eq!(r.status(), 200);
        let sent = texts(&rig);
        assert_eq!(sent.len(), n + 1);
        assert!(sent[n].ends_with("Reply STOP to opt out."), "{}", sent[n]);
    }
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

#[tokio::test]
async fn a_stop_that_lands_between_the_checks_and_settlement_is_never_charged() {
    let rig = rig().await;
    let phone = "+13125550190";
    // The customer's STOP is recorded the moment the sale's call row is written: after every
    // pre-payment check has passed, before the phone's mark and the settlement.
    inject::after_insert(
        &rig.db.url,
        "calls",
        &format!(
            "INSERT INTO suppressions (phone, active, reason, updated_at) \
             VALUES ('{phone}', TRUE, 'stop_keyword', '2026-11-16T20:00:00+00:00')"
        ),
    )
    .await;
    let r = rig.pay_and_call(PATH, &body_for(&rig, phone), None).await;
    assert_eq!(r.status(), 409);
    let error = r.json::<Value>().await.expect("json");
    assert_eq!(error["error"]["code"], "recipient_opted_out", "{error}");
    assert_eq!(rig.facilitator.settle_calls(), 0, "nothing charged");
    assert!(texts(&rig).is_empty(), "nothing sent");
}

async fn post_inbound(rig: &PaidApp, params: &[(String, String)]) -> u16 {
    let url = format!("{}/webhooks/sms/inbound", grove_tests::BASE_URL);
    rig.app
        .client
        .post(rig.app.url("/webhooks/sms/inbound"))
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

async fn paid_request(rig: &PaidApp, phone: &str) -> String {
    let r = rig.pay_and_call(PATH, &body_for(rig, phone), None).await;
    assert_eq!(r.status(), 200);
    r.json::<Value>().await.expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn view(rig: &PaidApp, id: &str) -> Value {
    rig.app
        .get_json(&format!("/api/v1/actions/review-request/requests/{id}"))
        .await
}

/// Whether a new request to `phone` is offered for sale (402) or refused as opted out (409).
async fn offered(rig: &PaidApp, phone: &str) -> u16 {
    rig.app
        .post_json(PATH, &body_for(rig, phone), &[])
        .await
        .status()
        .as_u16()
}

#[tokio::test]
async fn plain_words_revoke_consent_and_other_replies_are_kept_for_the_business() {
    let rig = rig().await;
    for (n, reply) in [
        "Please stop texting me",
        "remove me from your list",
        "unsubscribe please",
        "don't text me again",
        "no more texts",
        "take me off your list",
        "leave me alone",
        "revoke my consent",
        "Don't message me",
        "end these texts",
    ]
    .into_iter()
    .enumerate()
    {
        let phone = format!("+1312555016{n}");
        let id = paid_request(&rig, &phone).await;
        assert_eq!(
            post_inbound(&rig, &InboundSms::new(&phone, reply).params()).await,
            200
        );
        assert_eq!(view(&rig, &id).await["status"], "opted_out", "{reply}");
        assert_eq!(
            offered(&rig, &phone).await,
            409,
            "{reply}: the number is off sale"
        );
    }
    // An ambiguous reply, or STOP in another sense, changes nothing and is shown to the business.
    for (n, reply) in [
        "Who is this? Stop by the shop tomorrow?",
        "I can't stop smiling, thanks!",
        "Don't stop, these are great",
        "cancel my appointment",
    ]
    .into_iter()
    .enumerate()
    {
        let phone = format!("+1312555017{n}");
        let id = paid_request(&rig, &phone).await;
        assert_eq!(
            post_inbound(&rig, &InboundSms::new(&phone, reply).params()).await,
            200
        );
        let v = view(&rig, &id).await;
        assert_eq!(v["status"], "sent", "{reply}");
        assert!(
            v["events"].as_array().is_some_and(|e| e
                .iter()
                .any(|e| e["event"] == "reply_received" && e["detail"]["reply"] == reply)),
            "{v}"
        );
        assert_eq!(offered(&rig, &phone).await, 402, "{reply}");
    }
}

#[tokio::test]
async fn a_replayed_signed_stop_after_a_start_changes_nothing() {
    let rig = rig().await;
    let phone = "+13125550171";
    paid_request(&rig, phone).await;
    let stop = InboundSms::new(phone, "STOP").params();
    assert_eq!(post_inbound(&rig, &stop).await, 200);
    assert_eq!(offered(&rig, phone).await, 409);
    assert_eq!(
        post_inbound(&rig, &InboundSms::new(phone, "START").params()).await,
        200
    );
    assert_eq!(offered(&rig, phone).await, 402);
    // The old STOP, validly signed, posted again.
    assert_eq!(post_inbound(&rig, &stop).await, 200);
    assert_eq!(
        offered(&rig, phone).await,
        402,
        "the replay did not suppress the phone"
    );
}
