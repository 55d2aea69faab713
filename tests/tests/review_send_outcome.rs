//! A Twilio answer that leaves the send's outcome unknown (issues 10 and 26): a 5xx or a timeout
//! after the request left may come after Twilio queued the text. The worker's job runs here
//! against the loopback Twilio with the real client: one provider call, never repeated, the
//! message `unknown`, `send_outcome_unknown` logged once, and the request `unconfirmed`, never
//! `failed`. The service then asks Twilio's list of the messages sent to the number: found, the
//! request goes on as if the send had been answered (delivered schedules the follow-up), with no
//! status callback ever sent; not listed, it waits `NOT_SENT_AFTER` before it counts as not
//! sent. Twilio's signed report, posted to the API over the same database, counts at any time.
//! A definite refusal (a 4xx with Twilio's code) stays a plain failure.

use chrono::TimeDelta;
use grove_common::{
    clock::{Clock, ManualClock},
    completion::Completions,
    config::Config,
    db::reviews,
    jobs::{ReviewJob, ReviewStep},
    queue::JobQueue,
    review::{MessageStatus, ReviewStatus},
    review_service,
};
use grove_tests::{
    BASE_URL, TestApp, TestDb, default_env,
    review::{PHONE, afternoon, insert_request},
    twilio::{
        self as fake, Carrier, FakeTwilio, StatusCallback, TwilioReply, message_sid, sign_webhook,
    },
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
    twilio.stamp_with(clock.clone());
    let liveness = grove_common::db::liveness::Liveness::claim(&conn, &db.url)
        .await
        .expect("liveness lock");
    let deps = Deps {
        runs: grove_common::ledger::Runs::new(conn.clone(), 64),
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
        load: Default::default(),
        leases: Default::default(),
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
            trace: None,
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
                .map(|e| (e.kind, e.detail.clone()))
                .collect::<Vec<_>>(),
        )
        .expect("json")
    }

    async fn request(&self) -> grove_common::db::entities::review_request::Model {
        reviews::load(&self.deps.db, &self.review_id)
            .await
            .expect("load")
            .expect("request")
    }

    /// The `status` of the paid call's stored answer, once there is one.
    async fn result_status(&self) -> Option<String> {
        let call_id = self.request().await.call_id;
        grove_common::db::calls::load_result(&self.deps.db, call_id)
            .await
            .expect("load result")
            .map(|r| r.body["status"].as_str().unwrap_or_default().to_owned())
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
/// `created`: whether Twilio had the message (its list shows it); the lookup then finds it.
async fn unknown_then_delivered(reply: TwilioReply, created: bool) {
    let rig = rig().await;
    rig.twilio.script([reply]);
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1, "one provider call, never retried");
    assert!(rig.twilio.lists() >= 1, "the service asked Twilio's list");
    let events = rig.events().await;
    assert_eq!(
        events.matches("send_outcome_unknown").count(),
        1,
        "recorded once: {events}"
    );
    assert!(!events.contains("provider_error"), "{events}");
    if created {
        // Found in the list: sent, as if Twilio's answer had arrived.
        assert_eq!(rig.status().await, ReviewStatus::Sent);
        assert_eq!(rig.message_status().await, MessageStatus::Sent);
        assert!(events.contains("send_outcome_recovered"), "{events}");
    } else {
        // Not listed (yet): unconfirmed, never failed while the text may have gone.
        assert_eq!(rig.status().await, ReviewStatus::Unconfirmed);
        assert_eq!(rig.message_status().await, MessageStatus::Unknown);
    }

    // A later run (the sweeper, a redelivered job) sends nothing more.
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1);

    // Twilio's report of the delivery moves the request on, and schedules the follow-up.
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
    unknown_then_delivered(TwilioReply::ServerError, false).await;
}

#[tokio::test]
async fn a_twilio_timeout_is_an_unknown_outcome_that_a_delivery_report_recovers() {
    unknown_then_delivered(TwilioReply::Slow(Duration::from_secs(3)), true).await;
}

#[tokio::test]
async fn an_unknown_send_is_resolved_by_the_lookup_with_no_callback_ever_sent() {
    let rig = rig().await;
    // By the time anyone looks, the carrier has delivered it.
    rig.twilio.carrier(Carrier::Delivered);
    rig.twilio
        .script([TwilioReply::Slow(Duration::from_secs(3))]);
    rig.send().await;
    assert_eq!(rig.twilio.sends(), 1);
    assert_eq!(rig.message_status().await, MessageStatus::Delivered);
    let req = rig.request().await;
    assert_eq!(req.status, ReviewStatus::FollowUpScheduled);
    assert_eq!(
        req.follow_up_due_at,
        Some(afternoon() + TimeDelta::hours(72)),
        "the follow-up is scheduled from the delivery"
    );
    let msg = reviews::message(&rig.deps.db, &rig.review_id, "initial")
        .await
        .expect("load")
        .expect("message");
    assert_eq!(
        msg.provider_id,
        rig.twilio.messages()[0].sid,
        "the lookup names Twilio's message"
    );
    let events = rig.events().await;
    for kind in [
        "unconfirmed",
        "provider_reported_after_unknown",
        "send_outcome_recovered",
        "delivered",
        "follow_up_scheduled",
    ] {
        assert!(events.contains(kind), "{kind}: {events}");
    }
    assert!(events.contains("\"lookup\""), "{events}");
    // The paid call's answer says where it stands: never failed.
    assert_eq!(
        rig.result_status().await.as_deref(),
        Some("follow_up_scheduled")
    );
}

#[tokio::test]
async fn a_message_still_queued_is_found_though_a_sent_date_filter_leaves_it_out() {
    let rig = rig().await;
    rig.twilio.carrier(Carrier::Queued);
    rig.twilio
        .script([TwilioReply::Slow(Duration::from_secs(3))]);
    rig.send().await;
    assert_eq!(rig.status().await, ReviewStatus::Sent);
    assert_eq!(rig.message_status().await, MessageStatus::Queued);
    assert!(
        rig.twilio.lists() >= 2,
        "the dated list, then the newest messages"
    );
}

#[tokio::test]
async fn nothing_listed_counts_as_not_sent_only_after_the_list_had_time_to_catch_up() {
    let rig = rig().await;
    rig.twilio.script([TwilioReply::ServerError]);
    rig.send().await;
    assert_eq!(rig.status().await, ReviewStatus::Unconfirmed);
    assert_eq!(rig.result_status().await.as_deref(), Some("unconfirmed"));

    // Just before the grace ends, another look changes nothing.
    rig.clock
        .advance(review_service::NOT_SENT_AFTER - TimeDelta::seconds(1));
    let lists = rig.twilio.lists();
    rig.send().await;
    assert!(rig.twilio.lists() > lists, "looked again");
    assert_eq!(rig.status().await, ReviewStatus::Unconfirmed);

    // After it, nothing went: a real failure, which says why.
    rig.clock.advance(TimeDelta::seconds(2));
    rig.send().await;
    assert_eq!(rig.status().await, ReviewStatus::Failed);
    let api = rig.api().await;
    let view: serde_json::Value = api
        .get_json(&format!(
            "/api/v1/actions/review-request/requests/{}",
            rig.review_id
        ))
        .await;
    assert_eq!(view["failure"]["reason"], "not_sent", "{view}");
    assert_eq!(rig.twilio.sends(), 1, "never sent again");

    // A late status callback still counts: the text went after all.
    assert_eq!(rig.report(&api, &message_sid(), "delivered").await, 200);
    assert_eq!(rig.status().await, ReviewStatus::FollowUpScheduled);
    assert_eq!(rig.twilio.sends(), 1);
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
