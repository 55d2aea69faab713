//! The test support itself: the fake Twilio refuses the requests real Twilio refuses (so a
//! client bug cannot pass against it), and the webhook builders produce Twilio-shaped posts
//! whose signatures verify.

use grove_common::twilio::verify;
use grove_tests::twilio::{
    ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, InboundSms, MESSAGING_SERVICE_SID, StatusCallback,
    sign_webhook,
};

const TO: &str = "+13055550142";

#[test]
fn webhook_builders_make_twilio_shaped_signed_posts() {
    let url = "https://grove.test/webhooks/sms/status";
    let callback = StatusCallback::new("SM0123", TO, "undelivered").error_code(30006);
    let params = callback.params();
    let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    for name in [
        "MessageSid",
        "SmsSid",
        "MessageStatus",
        "SmsStatus",
        "AccountSid",
        "From",
        "To",
        "ApiVersion",
        "ErrorCode",
        "RawDlrDoneDate",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let signature = sign_webhook(AUTH_TOKEN, url, &params);
    assert!(verify(AUTH_TOKEN, url, &params, &signature));
    assert!(!verify("another-token", url, &params, &signature));

    let inbound = InboundSms::new(TO, "STOP").opt_out_type("STOP").params();
    let get = |name: &str| {
        inbound
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        (get("From"), get("To"), get("Body")),
        (Some(TO), Some(FROM), Some("STOP"))
    );
    assert_eq!(get("OptOutType"), Some("STOP"));
    assert_eq!(get("MessageSid"), get("SmsMessageSid"));
    let url = "https://grove.test/webhooks/sms/inbound";
    assert!(verify(
        AUTH_TOKEN,
        url,
        &inbound,
        &sign_webhook(AUTH_TOKEN, url, &inbound)
    ));
}

#[tokio::test]
async fn the_fake_refuses_what_twilio_refuses() {
    let fake = FakeTwilio::start().await;
    let url = format!(
        "{}/2010-04-01/Accounts/{}/Messages.json",
        fake.url(),
        ACCOUNT_SID
    );
    let auth = FakeTwilio::basic_auth(ACCOUNT_SID, AUTH_TOKEN);
    let http = grove_common::http_client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let cases: [(&[(&str, &str)], u64); 4] = [
        (
            &[("To", "3055550142"), ("From", FROM), ("Body", "x")],
            21211,
        ),
        (&[("To", TO), ("From", FROM)], 21602),
        (&[("To", TO), ("Body", "x")], 21603),
        (
            &[
                ("To", TO),
                ("From", FROM),
                ("MessagingServiceSid", MESSAGING_SERVICE_SID),
                ("Body", "x"),
            ],
            21603,
        ),
    ];
    for (form, code) in cases {
        let response = http
            .post(&url)
            .header("authorization", &auth)
            .form(form)
            .send()
            .await
            .expect("reaches the fake");
        assert_eq!(response.status(), 400, "{form:?}");
        let body: serde_json::Value = response.json().await.expect("JSON");
        assert_eq!(body["code"], code, "{form:?}");
        assert_eq!(body["status"], 400);
    }
    let unauthenticated = http
        .post(&url)
        .form(&[("To", TO)])
        .send()
        .await
        .expect("reaches");
    assert_eq!(unauthenticated.status(), 401);
    let body: serde_json::Value = unauthenticated.json().await.expect("JSON");
    assert_eq!(body["code"], 20003);
    assert_eq!(fake.sends(), 5);
}
