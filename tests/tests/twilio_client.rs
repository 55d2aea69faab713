//! The Twilio client against a fake Twilio speaking the real `Messages.json` API (CONTRACT 9,
//! "Providers"): the exact form it posts, how each answer maps to an `SmsError`, how often it
//! calls, and that no log line holds the auth token, the full number or the message text.

#[path = "twilio_client/logs.rs"]
mod logs;
#[path = "twilio_client/lookup.rs"]
mod lookup;

use grove_common::{
    config::{Config, Secret},
    review::MessageStatus,
};
use grove_tests::twilio::{
    ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, MESSAGING_SERVICE_SID, TwilioReply,
};
use grove_worker::sms::{self, OutgoingSms, RetryPolicy, SmsError, SmsProvider, TwilioProvider};
use logs::Logs;
use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

const TO: &str = "+13055550142";
const BODY: &str = "Hi Dana, thanks for visiting Harbor Physio! BODY-MARKER-4c1e";
const CALLBACK: &str = "https://grove.test/webhooks/sms/status?a=att_1";

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
    }
}

fn sms() -> OutgoingSms {
    OutgoingSms {
        to: TO.into(),
        body: BODY.into(),
        status_callback: Some(CALLBACK.into()),
        validity_period_s: Some(1800),
        reference: "msg_test_1".into(),
    }
}

fn client(fake: &FakeTwilio) -> TwilioProvider {
    TwilioProvider::new(&fake.config(), policy()).expect("client builds")
}

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_queued_send_posts_exactly_the_expected_form_with_basic_auth() {
    let fake = FakeTwilio::start().await;
    let sent = client(&fake).send(&sms()).await.expect("sent");

    assert_eq!(fake.sends(), 1);
    let request = &fake.messages()[0];
    assert_eq!(
        request.fields,
        fields(&[
            ("To", TO),
            ("From", FROM),
            ("Body", BODY),
            ("StatusCallback", CALLBACK),
            ("ValidityPeriod", "1800"),
        ])
    );
    let expected_auth = FakeTwilio::basic_auth(ACCOUNT_SID, AUTH_TOKEN);
    assert_eq!(
        request.authorization.as_deref(),
        Some(expected_auth.as_str())
    );
    assert_eq!(request.status, 201);

    assert_eq!(Some(&sent.provider_id), request.sid.as_ref());
    assert!(sent.provider_id.starts_with("SM") && sent.provider_id.len() == 34);
    assert_eq!(sent.status, MessageStatus::Queued);
    assert_eq!(sent.segments, Some(1));
}

#[tokio::test]
async fn optional_fields_are_left_out_and_the_validity_period_is_clamped() {
    let fake = FakeTwilio::start().await;
    let twilio = client(&fake);
    let bare = OutgoingSms {
        status_callback: None,
        validity_period_s: None,
        ..sms()
    };
    twilio.send(&bare).await.expect("sent");
    for (asked, sent) in [(0, "1"), (99_999, "36000")] {
        let sms = OutgoingSms {
            validity_period_s: Some(asked),
            ..sms()
        };
        twilio.send(&sms).await.expect("sent");
        let last = fake.messages().pop().expect("recorded");
        assert_eq!(last.field("ValidityPeriod"), Some(sent));
    }
    assert_eq!(
        fake.messages()[0].fields,
        fields(&[("To", TO), ("From", FROM), ("Body", BODY)])
    );
}

#[tokio::test]
async fn the_messaging_service_is_preferred_over_a_from_number() {
    let fake = FakeTwilio::start().await;
    let mut config = fake.config();
    config.messaging_service_sid = Some(MESSAGING_SERVICE_SID.into());
    let twilio = TwilioProvider::new(&config, policy()).expect("client builds");

    let sent = twilio.send(&sms()).await.expect("sent");
    let request = &fake.messages()[0];
    assert_eq!(
        request.field("MessagingServiceSid"),
        Some(MESSAGING_SERVICE_SID)
    );
    assert_eq!(request.field("From"), None);
    // A service answers `accepted` with no segments counted yet.
    assert_eq!((sent.status.as_str(), sent.segments), ("accepted", None));
}

#[tokio::test]
async fn an_opted_out_recipient_fails_after_one_call() {
    let fake = FakeTwilio::start().await;
    fake.always(TwilioReply::OptedOut);
    let error = client(&fake).send(&sms()).await.unwrap_err();
    assert!(
        matches!(error, SmsError::OptedOut { code: 21610 }),
        "{error:?}"
    );
    assert_eq!(fake.sends(), 1);
}

#[tokio::test]
async fn an_invalid_number_is_undeliverable_after_one_call_and_stays_out_of_the_error() {
    let fake = FakeTwilio::start().await;
    fake.always(TwilioReply::InvalidNumber);
    let error = client(&fake).send(&sms()).await.unwrap_err();
    let SmsError::Undeliverable { code, message } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*code, 21211);
    assert!(message.contains("+1***0142"), "{message}");
    assert!(!error.to_string().contains("3055550142"), "{error}");
    assert_eq!(fake.sends(), 1);
}

#[tokio::test]
async fn a_rate_limit_then_a_queued_answer_succeeds_on_the_second_call() {
    let fake = FakeTwilio::start().await;
    fake.script([TwilioReply::RateLimited, TwilioReply::Queued]);
    let sent = client(&fake).send(&sms()).await.expect("sent");
    assert_eq!(fake.sends(), 2);
    assert_eq!(fake.messages()[0].status, 429);
    assert_eq!(Some(sent.provider_id), fake.messages()[1].sid.clone());
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let fake = FakeTwilio::start().await;
    fake.script([TwilioReply::RateLimitedFor(Duration::from_secs(1))]);
    let started = Instant::now();
    client(&fake).send(&sms()).await.expect("sent");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(fake.sends(), 2);
}

#[tokio::test]
async fn a_server_error_is_an_unknown_outcome_never_retried() {
    // A 5xx may come after Twilio queued the message: a second attempt could text twice.
    let fake = FakeTwilio::start().await;
    fake.always(TwilioReply::ServerError);
    let error = client(&fake).send(&sms()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SmsError::Transient {
                status: Some(500),
                code: Some(20500),
                may_have_been_sent: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(fake.sends(), 1, "never repeated blindly");
    let text = format!("{error}");
    assert!(
        !text.contains("3055550142") && !text.contains("BODY-MARKER"),
        "{text}"
    );
}

#[tokio::test]
async fn a_wrong_auth_token_is_rejected_with_401_and_not_retried() {
    let fake = FakeTwilio::start().await;
    let mut config = fake.config();
    config.auth_token = Secret::new("0000wrong0000");
    let twilio = TwilioProvider::new(&config, policy()).expect("client builds");
    let error = twilio.send(&sms()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SmsError::Rejected {
                status: 401,
                code: Some(20003),
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(fake.sends(), 1);
}

#[tokio::test]
async fn a_timeout_is_not_retried_because_the_message_may_have_been_sent() {
    let fake = FakeTwilio::start().await;
    fake.always(TwilioReply::Slow(Duration::from_secs(3)));
    let twilio = TwilioProvider::new(
        &fake.config(),
        RetryPolicy {
            request_timeout: Duration::from_millis(300),
            ..policy()
        },
    )
    .expect("client builds");
    let error = twilio.send(&sms()).await.unwrap_err();
    let SmsError::Transient {
        status: None,
        message,
        may_have_been_sent: true,
        ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert!(message.contains("may have been sent"), "{message}");
    assert_eq!(fake.sends(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_and_ends_transient() {
    let logs = Logs::capture();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let fake = FakeTwilio::start().await;
    let mut config = fake.config();
    config.base_url = format!("http://127.0.0.1:{port}");
    let twilio = TwilioProvider::new(&config, policy()).expect("client builds");
    let error = twilio.send(&sms()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SmsError::Transient {
                status: None,
                may_have_been_sent: false,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(logs.text().matches("sms send failed; retrying").count(), 2);
}

fn env(pairs: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Config::from_map(&map).expect("valid configuration")
}

#[tokio::test]
async fn from_config_builds_the_twilio_client_the_environment_names() {
    let fake = FakeTwilio::start().await;
    let config = env(&[
        ("SMS_PROVIDER", "twilio"),
        ("TWILIO_ACCOUNT_SID", ACCOUNT_SID),
        ("TWILIO_AUTH_TOKEN", AUTH_TOKEN),
        ("TWILIO_FROM", FROM),
        ("TWILIO_BASE_URL", fake.url()),
    ]);
    let provider = sms::from_config(&config).expect("provider");
    assert_eq!(provider.name(), "twilio");
    provider.send(&sms()).await.expect("sent");
    assert_eq!(fake.sends(), 1);
}

#[tokio::test]
async fn the_outbox_sends_nothing_and_never_logs_the_full_number() {
    let logs = Logs::capture();
    let fake = FakeTwilio::start().await;
    // Twilio settings are present but unused: only SMS_PROVIDER=twilio reads them.
    let config = env(&[("SMS_PROVIDER", "outbox"), ("TWILIO_BASE_URL", fake.url())]);
    let outbox = sms::from_config(&config).expect("provider");
    assert_eq!(outbox.name(), "outbox");

    let sent = outbox.send(&sms()).await.expect("logged");
    assert!(sent.provider_id.starts_with("OB") && sent.provider_id.len() == 34);
    assert_eq!(sent.status, MessageStatus::Sent);
    assert_eq!(fake.sends(), 0);
    logs.assert_clean("+1***0142", &["3055550142", AUTH_TOKEN]);
    assert!(logs.text().contains(&sent.provider_id));
}
