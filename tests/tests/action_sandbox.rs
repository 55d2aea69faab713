//! The review-request sandbox checks exactly what the paid call checks (same statuses, codes and
//! details, the opt-out list and the cooldown included), and answers with a sample built from the
//! request: its names, its recipient's zone and quiet hours, a tracked link on `PUBLIC_BASE_URL`.
//! A 422 with one problem keeps the code clients know (`validation_failed`, `consent_invalid`);
//! with several it says `invalid_request`; either way each detail carries its own code.

use chrono::{DateTime, Duration as Days, TimeZone, Utc};
use grove_common::clock::Clock;
use grove_tests::{
    BASE_URL, action_body,
    paid::{Options, PaidApp, TWILIO_TOKEN, spawn_paid},
    twilio::{InboundSms, sign_webhook},
};
use serde_json::{Value, json};

const PATH: &str = "/api/v1/actions/review-request/call";
const SANDBOX: (&str, &str) = ("x-grove-sandbox", "1");

/// 2026-11-16 (a Monday) at 15:00 in New York: inside every window.
fn monday_afternoon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 16, 20, 0, 0)
        .single()
        .expect("valid instant")
}

async fn rig(twilio: bool) -> PaidApp {
    spawn_paid(Options {
        twilio,
        clock_at: Some(monday_afternoon()),
        ..Default::default()
    })
    .await
}

/// A valid request for `phone` whose consent is a month old by the rig's clock.
fn body_for(rig: &PaidApp, phone: &str) -> Value {
    let mut b = action_body();
    b["customer"]["phone"] = json!(phone);
    b["consent"]["captured_at"] = json!((rig.clock.now() - Days::days(30)).to_rfc3339());
    b
}

/// (what, the changes as `(pointer, value)`, the code both answers must give, and each detail's
/// `(path, code)`).
type Case = (
    &'static str,
    Vec<(&'static str, Value)>,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// Status, headers that matter and body of one answer, with the request id left out.
async fn outcome(r: reqwest::Response) -> (u16, bool, Value) {
    let status = r.status().as_u16();
    let offered = r.headers().get("payment-required").is_some();
    let mut body: Value = r.json().await.expect("json");
    if let Some(error) = body.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("request_id");
    }
    (status, offered, body)
}

/// The same body, unpaid and in the sandbox: both answers must agree exactly.
async fn both(rig: &PaidApp, body: &Value) -> (Value, Value) {
    let (real_status, offered, real) = outcome(rig.app.post_json(PATH, body, &[]).await).await;
    let (sandbox_status, _, sandbox) =
        outcome(rig.app.post_json(PATH, body, &[SANDBOX]).await).await;
    assert!(
        !offered,
        "a refused request is never offered for sale: {real}"
    );
    assert_eq!(
        sandbox_status, real_status,
        "sandbox {sandbox} vs paid {real}"
    );
    (real, sandbox)
}

fn details(error: &Value) -> Vec<(String, String)> {
    error["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap_or_default().to_owned(),
                d["code"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_sandbox_refuses_a_bad_body_exactly_as_the_paid_call_does() {
    let rig = rig(false).await;
    let old_consent = ("/consent/captured_at", json!("2000-01-01T00:00:00Z"));
    let shortener = ("/business/review_url", json!("https://bit.ly/abc123"));
    let mars = ("/business/timezone", json!("Mars/Olympus_Mons"));
    let uk_phone = ("/customer/phone", json!("+447700900123"));
    // One problem keeps the code clients know today; its detail names the rule it breaks.
    // More than one answers `invalid_request`, whatever their kinds, each with its own code.
    let cases: Vec<Case> = vec![
        (
            "consent from 2000",
            vec![old_consent.clone()],
            "consent_invalid",
            vec![("/consent/captured_at", "consent_too_old")],
        ),
        (
            "consent from next year",
            vec![("/consent/captured_at", json!("2027-11-16T20:00:00Z"))],
            "consent_invalid",
            vec![("/consent/captured_at", "consent_in_future")],
        ),
        (
            "link shortener",
            vec![shortener.clone()],
            "validation_failed",
            vec![("/business/review_url", "link_shortener")],
        ),
        (
            "invalid zone",
            vec![mars.clone()],
            "validation_failed",
            vec![("/business/timezone", "invalid_time_zone")],
        ),
        (
            "+44 phone",
            vec![uk_phone.clone()],
            "validation_failed",
            vec![("/customer/phone", "phone_not_us")],
        ),
        (
            "a web address in the template",
            vec![(
                "/message/template",
                json!("{business_name}: see www.example.com {review_link}"),
            )],
            "validation_failed",
            vec![("/message/template", "link_not_allowed")],
        ),
        (
            "all four at once",
            vec![old_consent, shortener, mars.clone(), uk_phone.clone()],
            "invalid_request",
            vec![
                ("/consent/captured_at", "consent_too_old"),
                ("/business/review_url", "link_shortener"),
                ("/business/timezone", "invalid_time_zone"),
                ("/customer/phone", "phone_not_us"),
            ],
        ),
        (
            "two problems of one kind",
            vec![mars, uk_phone],
            "invalid_request",
            vec![
                ("/business/timezone", "invalid_time_zone"),
                ("/customer/phone", "phone_not_us"),
            ],
        ),
        (
            "an unknown consent method and a link in the template",
            vec![
                ("/consent/method", json!("telepathy")),
                (
                    "/message/template",
                    json!("{business_name}: see www.example.com {review_link}"),
                ),
            ],
            "invalid_request",
            vec![
                ("/consent/method", "consent_invalid"),
                ("/message/template", "link_not_allowed"),
            ],
        ),
    ];
    for (what, patches, code, expected) in cases {
        let mut body = body_for(&rig, "+13125550150");
        for (pointer, value) in patches {
            grove_tests::set_pointer(&mut body, pointer, value);
        }
        let (real, sandbox) = both(&rig, &body).await;
        assert_eq!(real["error"]["code"], code, "{what}: {real}");
        assert_eq!(sandbox, real, "{what}: same code, message and details");
        let listed = details(&real);
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(p, c)| (p.to_owned(), c.to_owned()))
            .collect();
        assert_eq!(
            listed, expected,
            "{what}: every problem, each with its code"
        );
    }
    assert_eq!(rig.facilitator.settle_calls(), 0);
}

#[tokio::test]
async fn the_sandbox_honours_the_opt_out_list_and_the_cooldown() {
    let rig = rig(true).await;
    // Cooldown: a paid request to this phone, then another inside the window.
    let phone = "+13125550151";
    let paid = rig.pay_and_call(PATH, &body_for(&rig, phone), None).await;
    assert_eq!(paid.status(), 200);
    let mut again = body_for(&rig, phone);
    again["min_days_since_last_request"] = json!(30);
    let (real, sandbox) = both(&rig, &again).await;
    assert_eq!(real["error"]["code"], "cooldown_active");
    assert_eq!(sandbox, real);

    // Opt-out: the phone replies STOP; neither the sale nor the sandbox goes ahead.
    let params = InboundSms::new(phone, "STOP").params();
    let url = format!("{BASE_URL}/webhooks/sms/inbound");
    let r = rig
        .app
        .client
        .post(rig.app.url("/webhooks/sms/inbound"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header(
            "x-twilio-signature",
            sign_webhook(TWILIO_TOKEN, &url, &params),
        )
        .body(serde_urlencoded::to_string(&params).expect("form"))
        .send()
        .await
        .expect("webhook");
    assert_eq!(r.status(), 200);
    let (real, sandbox) = both(&rig, &body_for(&rig, phone)).await;
    assert_eq!(real["error"]["code"], "recipient_opted_out");
    assert_eq!(sandbox, real);
    assert_eq!(
        rig.facilitator.settle_calls(),
        1,
        "only the first request was sold"
    );
}

#[tokio::test]
async fn the_sandbox_sample_reflects_the_request() {
    let rig = rig(false).await;
    let schema = grove_tests::compile(
        &rig.app
            .get_json("/api/v1/schemas/actions/review_request/response.json")
            .await,
    );
    let mut body = body_for(&rig, "+13125550152");
    body["business"]["name"] = json!("Tidewater Dental");
    body["customer"]["first_name"] = json!("Marisol");
    body["follow_up"] = json!({"enabled": false});
    let r = rig.app.post_json(PATH, &body, &[SANDBOX]).await;
    assert_eq!(r.status(), 200);
    let sample: Value = r.json().await.expect("json");
    let errors: Vec<String> = schema.iter_errors(&sample).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(sample["sandbox"], true);
    assert_eq!(
        sample["status"], "scheduled",
        "15:00 in New York is inside the window"
    );
    assert_eq!(sample["scheduled_send_at"], "2026-11-16T20:00:00Z");
    assert_eq!(
        sample["follow_up"],
        json!({"enabled": false, "due_at": null})
    );
    let text = sample["message"]["body"].as_str().expect("body");
    assert!(
        text.contains("Marisol") && text.contains("Tidewater Dental"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{BASE_URL}/r/")),
        "tracked link on PUBLIC_BASE_URL: {text}"
    );
    assert!(!text.contains("localhost"), "{text}");
    assert!(
        sample["links"]["self"]
            .as_str()
            .is_some_and(|l| l.starts_with(BASE_URL)),
        "{sample}"
    );

    // The paid call renders the same message, only its link token differs.
    let paid: Value = rig
        .pay_and_call(PATH, &body, None)
        .await
        .json()
        .await
        .expect("json");
    let without_token = |s: &str| {
        let (head, tail) = s.split_once("/r/").expect("tracked link");
        let rest = tail.split_once(' ').map(|(_, r)| r).unwrap_or_default();
        format!("{head}/r/<token> {rest}")
    };
    assert_eq!(
        without_token(text),
        without_token(paid["message"]["body"].as_str().expect("paid body"))
    );
    assert_eq!(sample["message"]["segments"], paid["message"]["segments"]);
    assert_eq!(sample["message"]["encoding"], paid["message"]["encoding"]);

    // The recipient's zone decides the send time: 05:00 in Tokyo waits for 08:00 there.
    let mut tokyo = body_for(&rig, "+13125550153");
    tokyo["customer"]["timezone"] = json!("Asia/Tokyo");
    let sample: Value = rig
        .app
        .post_json(PATH, &tokyo, &[SANDBOX])
        .await
        .json()
        .await
        .expect("json");
    assert!(schema.is_valid(&sample), "{sample}");
    assert_eq!(sample["status"], "deferred_quiet_hours");
    assert_eq!(sample["scheduled_send_at"], "2026-11-16T23:00:00Z");

    // A requested send time is kept when it falls inside the window.
    let mut later = body_for(&rig, "+13125550154");
    later["send_at"] = json!("2026-11-18T10:30:00-05:00");
    let sample: Value = rig
        .app
        .post_json(PATH, &later, &[SANDBOX])
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(sample["status"], "scheduled");
    assert_eq!(sample["scheduled_send_at"], "2026-11-18T15:30:00Z");
}
