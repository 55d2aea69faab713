//! A Twilio answer that leaves the send's outcome unknown (issue 10): a 5xx or a timeout after
//! the request left may come after Twilio queued the text. The worker's job runs here against the
//! loopback Twilio with the real client: one provider call, never repeated, the message `unknown`
//! and the request `failed` with `send_outcome_unknown` once. Twilio's signed report of the
//! message, posted to the API over the same database, then resumes the request: delivered
//! schedules the follow-up, and the customer got one text in all. A definite refusal (a 4xx
//! with Twilio's code) stays a plain failure.

use grove_common::{
    clock::{Clock, ManualClock},
    completion::Completions,
    config::Config,
    db::reviews,
    jobs::{ReviewJob, ReviewStep},
    queue::JobQueue,
    review::{MessageStatus, ReviewStatus},
};
use grove_tests::{
    BASE_URL, TestApp, TestDb, default_env,
    review::{PHONE, afternoon, insert_request},
    twilio::{self as fake, FakeTwilio, StatusCallback, TwilioReply, message_sid, sign_webhook},
};
use grove_worker::{
    jobs::Deps,
    review::handle,
    sms::{RetryPolicy, SmsProvider, TwilioProvider},
};
use std::{sync::Arc, time::Duration};

const STATUS_PATH: &str = "/webhooks/sms/status";

struct Rig {
    deps: Deps,
    clock: ManualClock,
    twilio: FakeTwilio,
    review_id: String,
    db: TestDb,
}

/// A request due now, and a worker whose Twilio client gives up on an answer after 500 ms.
async fn rig() -> Rig {
    let db = TestDb::new().await;
    let conn = grove_common::db::connect_url(&db.url)
        .await
        .expect("database");
    grove_migrations::run(&conn).await.expect("migrations");
    let now = afternoon();
    let (_, review_id) = insert_request(&conn, now, true).await;
    let twilio = FakeTwilio::start().await;
    let retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        request_timeout: Duration::from_millis(500),
    };
    let sms = TwilioProvider::new(&twilio.config(), retry).expect("twilio client");
    let clock = ManualClock::new(now);
    let liveness = grove_common::db::liveness::Liveness::claim(&conn, &db.url)
        .await
        .expect("liveness lock");
    let deps = Deps {
        db: conn,
        completions: Completions::local(),
        engine: None,
        sms: Arc::new(sms) as Arc<dyn SmsProvider>,
        clock: Arc::new(clock.clone()) as Arc<dyn Clock>,
        queue: JobQueue::memory().0,
        public_base_url: BASE_URL.into(),
        status_callback: Some(format!("{BASE_URL}{STATUS_PATH}")),
        sweeps: Arc::default(),
        liveness,
        concurrency: grove_common::config::DEFAULT_WORKER_CONCURRENCY,
    };
    Rig {
        deps,
        clock,
        twilio,
        review_id,
        db,
    }
}

impl Rig {
    async fn send(&self) {
        let job = ReviewJob {
            review_id: self.review_id.clone(),
            step: ReviewStep::Send,
            request_id: "req-test".into(),
        };
        handle(&self.deps, &job).await.expect("the job runs");
    }

    async fn status(&self) -> ReviewStatus {
        reviews::load(&self.deps.db, &self.review_id)
            .await
            .expect("load")
            .expect("request")
            .status
    }

    async fn events(&self) -> String {
        serde_json::to_string(
            &reviews::events(&self.deps.db, &self.review_id)
                .await
                .expect("events")
                .iter()
                .map(|e| (e.kind.clone(), e.detail.clone()))
                .collect::<Vec<_>>(),
        )
        .expect("json")
    }

    async fn message_status(&self) -> MessageStatus {
        reviews::message(&self.deps.db, &self.review_id, "initial")
            .await
            .expect("load")
            .expect("message")
            .status
    }

    /// The API over the same database and clock, receiving Twilio's webhooks.
    async fn api(&self) -> TestApp {
        let mut env = default_env();
        env.insert("DATABASE_URL".into(), self.db.url.clone());
        env.insert("SMS_PROVIDER".into(), "twilio".into());
        env.insert("TWILIO_ACCOUNT_SID".into(), fake::ACCOUNT_SID.into());
        env.insert("TWILIO_AUTH_TOKEN".into(), fake::AUTH_TOKEN.into());
        env.insert("TWILIO_FROM".into(), fake::FROM.into());
        env.insert("TWILIO_BASE_URL".into(), self.twilio.url().to_owned());
        let config = Config::from_map(&env).expect("configuration");
        grove_tests::start_with_clock(config, Arc::new(self.clock.clone())).await
    }

    /// Posts Twilio's signed status report for message `sid` to the callback URL the worker
    /// gave Twilio (it carries our message id).
    async fn report(&self, api: &TestApp, sid: &str, provider_status: &str) -> u16 {
        let sent = self.twilio.messages();
        let callback = sent[0].field("StatusCallback").expect("a StatusCallback");
        let path = callback
            .strip_prefix(BASE_URL)
            .expect("under PUBLIC_BASE_URL");
        assert!(path.starts_with(&format!("{STATUS_PATH}?m=")), "{path}");
        let params = StatusCallback::new(sid, PHONE, provider_status).params();
        api.client
            .post(api.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .header(
                "x-twilio-signature",
                sign_webhook(fake::AUTH_TOKEN, callback, &params),
            )
            .body(serde_urlencoded::to_string(&params).expect("form"))
            .send()
            .await
            .expect("webhook")
            .status()
            .as_u16()
    }
}

/// One send that Twilio answers with `reply`, then Twilio's report that the text was delivered.
async fn unknown_then_delivered(reply: TwilioReply) {
    let rig = rig().await;
    rig.twilio.script([reply]);
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1, "one provider call, never retried");
    assert_eq!(rig.status().await, ReviewStatus::Failed);
    assert_eq!(rig.message_status().await, MessageStatus::Unknown);
    let events = rig.events().await;
    assert_eq!(
        events.matches("send_outcome_unknown").count(),
        1,
        "recorded once: {events}"
    );
    assert!(!events.contains("provider_error"), "{events}");

    // A later run (the sweeper, a redelivered job) sends nothing more.
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1);

    // Twilio had the text after all: its report resumes the request where the send would have
    // left it, and the delivery schedules the follow-up.
    let sid = rig.twilio.messages()[0]
        .sid
        .clone()
        .unwrap_or_else(message_sid);
    let api = rig.api().await;
    assert_eq!(rig.report(&api, &sid, "delivered").await, 200);
    assert_eq!(rig.message_status().await, MessageStatus::Delivered);
    assert_eq!(rig.status().await, ReviewStatus::FollowUpScheduled);
    let events = rig.events().await;
    for kind in ["provider_reported_after_unknown", "send_outcome_recovered"] {
        assert!(events.contains(kind), "{kind}: {events}");
    }
    assert_eq!(rig.twilio.sends(), 1, "one text in all");
}

#[tokio::test]
async fn a_twilio_500_is_an_unknown_outcome_that_a_delivery_report_recovers() {
    unknown_then_delivered(TwilioReply::ServerError).await;
}

#[tokio::test]
async fn a_twilio_timeout_is_an_unknown_outcome_that_a_delivery_report_recovers() {
    unknown_then_delivered(TwilioReply::Slow(Duration::from_secs(3))).await;
}

#[tokio::test]
async fn a_definite_refusal_is_a_plain_failure() {
    let rig = rig().await;
    rig.twilio.script([TwilioReply::InvalidNumber]);
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1);
    assert_eq!(rig.status().await, ReviewStatus::Failed);
    assert_eq!(rig.message_status().await, MessageStatus::Failed);
    let events = rig.events().await;
    assert!(events.contains("provider_error"), "{events}");
    assert!(!events.contains("send_outcome_unknown"), "{events}");
}
