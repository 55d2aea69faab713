//! Review send jobs run at least once, and sometimes twice at the same moment: the sweeper finds
//! a request that is due while its own job is running, or Redis redelivers a job whose worker
//! looked dead. These tests run the worker's handler directly against a real database, with an
//! SMS provider that holds its answer until the test lets it go, so the second run lands exactly
//! while the first is inside the provider call.

use chrono::TimeDelta;
use grove_common::{
    clock::{Clock, ManualClock},
    completion::Completions,
    db::{
        calls,
        entities::review_request,
        reviews::{self, ATTEMPT_STALE_AFTER, Attempt, NewMessage},
    },
    jobs::{ReviewJob, ReviewStep},
    queue::JobQueue,
    review::{MessageStatus, ReviewStatus},
    review_service::{self, ReviewEvent},
};
use grove_tests::{
    TestDb,
    review::{afternoon, insert_request},
};
use grove_worker::{
    jobs::Deps,
    review::handle,
    sms::{OutgoingSms, SentSms, SmsError, SmsProvider},
};
use sea_orm::{ActiveValue::Set, EntityTrait};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};
use tokio::sync::Notify;
use uuid::Uuid;

/// Answers every send, but only once the test releases it.
#[derive(Default)]
struct HeldProvider {
    sends: AtomicU32,
    entered: Notify,
    release: Notify,
}

#[async_trait::async_trait]
impl SmsProvider for HeldProvider {
    fn name(&self) -> &'static str {
        "held"
    }

    async fn send(&self, _sms: &OutgoingSms) -> Result<SentSms, SmsError> {
        let n = self.sends.fetch_add(1, Ordering::SeqCst) + 1;
        self.entered.notify_one();
        self.release.notified().await;
        Ok(SentSms {
            provider_id: format!("SMheld{n}"),
            status: MessageStatus::Queued,
            segments: Some(1),
        })
    }
}

struct Rig {
    deps: Arc<Deps>,
    clock: Arc<ManualClock>,
    sms: Arc<HeldProvider>,
    review_id: String,
    call_id: Uuid,
    _db: TestDb,
}

/// A paid call and its review request, `scheduled` to go now, as the API leaves them.
async fn rig() -> Rig {
    let test_db = TestDb::new().await;
    let db = grove_common::db::connect_url(&test_db.url)
        .await
        .expect("database");
    grove_migrations::run(&db).await.expect("migrations");
    let now = afternoon();
    let (call_id, review_id) = insert_request(&db, now, false).await;
    let clock = Arc::new(ManualClock::new(now));
    let sms = Arc::new(HeldProvider::default());
    let liveness = grove_common::db::liveness::Liveness::claim(&db, &test_db.url)
        .await
        .expect("liveness lock");
    let deps = Deps {
        runs: grove_common::ledger::Runs::new(db.clone(), 64),
        db,
        completions: Completions::local(),
        engine: None,
        sms: Arc::clone(&sms) as Arc<dyn SmsProvider>,
        clock: Arc::clone(&clock) as Arc<dyn Clock>,
        queue: JobQueue::memory().0,
        public_base_url: "https://grove.test".into(),
        status_callback: None,
        sweeps: Arc::default(),
        liveness,
        concurrency: grove_common::config::DEFAULT_WORKER_CONCURRENCY,
        load: Default::default(),
        leases: Default::default(),
    };
    Rig {
        deps: Arc::new(deps),
        clock,
        sms,
        review_id,
        call_id,
        _db: test_db,
    }
}

fn send_job(rig: &Rig) -> ReviewJob {
    ReviewJob {
        review_id: rig.review_id.clone(),
        step: ReviewStep::Send,
        request_id: "req-test".into(),
        trace: None,
    }
}

async fn request(rig: &Rig) -> review_request::Model {
    reviews::load(&rig.deps.db, &rig.review_id)
        .await
        .expect("load")
        .expect("request exists")
}

/// Starts the first run and returns once it is inside the provider call.
async fn first_run_in_flight(rig: &Rig) -> tokio::task::JoinHandle<()> {
    let (deps, job) = (Arc::clone(&rig.deps), send_job(rig));
    let first = tokio::spawn(async move { handle(&deps, &job).await.expect("first run") });
    tokio::time::timeout(Duration::from_secs(20), rig.sms.entered.notified())
        .await
        .expect("the first run reaches the provider");
    first
}

/// The service orders the first send (the request moves to `sending`), and nobody carries the
/// order out: what a run that died right there leaves behind.
async fn send_ordered(
    db: &sea_orm::DatabaseConnection,
    review_id: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> bool {
    let effects = review_service::apply(db, review_id, ReviewEvent::SendDue, at)
        .await
        .expect("apply");
    effects.status == Some(ReviewStatus::Sending) && effects.send.is_some()
}

async fn result_status(rig: &Rig) -> Option<String> {
    calls::load_result(&rig.deps.db, rig.call_id)
        .await
        .expect("load result")
        .map(|r| r.body["status"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn a_duplicate_run_leaves_a_send_in_flight_alone() {
    let rig = rig().await;
    let first = first_run_in_flight(&rig).await;

    // The duplicate finishes while the first run is still waiting for the provider.
    handle(&rig.deps, &send_job(&rig))
        .await
        .expect("duplicate run");
    assert_eq!(rig.sms.sends.load(Ordering::SeqCst), 1);
    assert_eq!(request(&rig).await.status, ReviewStatus::Sending);
    assert_eq!(
        result_status(&rig).await,
        None,
        "`sending` is no answer for the waiting caller"
    );

    rig.sms.release.notify_one();
    first.await.expect("first run finishes");
    assert_eq!(request(&rig).await.status, ReviewStatus::Sent);
    assert_eq!(result_status(&rig).await.as_deref(), Some("sent"));
    let msg = reviews::message(&rig.deps.db, &rig.review_id, "initial")
        .await
        .expect("load")
        .expect("message");
    assert_eq!(msg.provider_id.as_deref(), Some("SMheld1"));
    assert_eq!(rig.sms.sends.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_slow_provider_call_keeps_its_lease() {
    let rig = rig().await;
    let first = first_run_in_flight(&rig).await;

    // Time passes well beyond the lease; the live run renews it within a heartbeat.
    rig.clock.advance(ATTEMPT_STALE_AFTER * 3);
    let renewed_at = rig.clock.now();
    grove_tests::wait_until("the lease to be renewed", async || {
        reviews::message(&rig.deps.db, &rig.review_id, "initial")
            .await
            .expect("load")
            .is_some_and(|msg| msg.updated_at == renewed_at)
    })
    .await;
    handle(&rig.deps, &send_job(&rig))
        .await
        .expect("duplicate run");
    assert_eq!(request(&rig).await.status, ReviewStatus::Sending);

    rig.sms.release.notify_one();
    first.await.expect("first run finishes");
    assert_eq!(request(&rig).await.status, ReviewStatus::Sent);
    assert_eq!(rig.sms.sends.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_abandoned_attempt_ends_as_unknown_and_is_never_resent() {
    let rig = rig().await;
    let db = &rig.deps.db;
    let start = rig.clock.now();
    // What a run that died inside the provider call leaves behind.
    assert!(send_ordered(db, &rig.review_id, start).await);
    let attempt = reviews::begin_attempt(
        db,
        NewMessage {
            request_id: &rig.review_id,
            kind: "initial",
            provider: "held",
            body: "Hi Dana",
            encoding: "GSM-7",
            segments: 1,
        },
        start,
    )
    .await
    .expect("attempt");
    assert!(matches!(attempt, Attempt::Fresh(_)));

    // Within the lease the sweeper leaves it, and a redelivered job changes nothing.
    rig.clock.advance(ATTEMPT_STALE_AFTER / 2);
    let due = reviews::due(db, rig.clock.now()).await.expect("due");
    assert!(due.iter().all(|r| r.id != rig.review_id));
    handle(&rig.deps, &send_job(&rig)).await.expect("run");
    assert_eq!(request(&rig).await.status, ReviewStatus::Sending);

    // Once it has lapsed the sweeper picks it up, and the run records the unknown outcome.
    rig.clock.advance(ATTEMPT_STALE_AFTER);
    let due = reviews::due(db, rig.clock.now()).await.expect("due");
    assert!(due.iter().any(|r| r.id == rig.review_id));
    // Two sweeper passes push two jobs; both load the request while it is still `sending`.
    let (deps, job) = (Arc::clone(&rig.deps), send_job(&rig));
    let second_pass = request(&rig).await;
    handle(&rig.deps, &send_job(&rig)).await.expect("run");
    // Issue 26: a text that may have gone out is never shown as failed. This provider cannot
    // list what it sent, so the request stays unconfirmed (the loopback Twilio's list resolves
    // it: review_send_outcome.rs).
    assert_eq!(request(&rig).await.status, ReviewStatus::Unconfirmed);
    assert_eq!(second_pass.status, ReviewStatus::Sending);
    review_request::Entity::update(review_request::ActiveModel {
        id: Set(rig.review_id.clone()),
        status: Set(ReviewStatus::Sending),
        ..Default::default()
    })
    .exec(db)
    .await
    .expect("as the second job saw it");
    handle(&deps, &job).await.expect("second run");
    assert_eq!(request(&rig).await.status, ReviewStatus::Unconfirmed);
    assert_eq!(rig.sms.sends.load(Ordering::SeqCst), 0, "never sent again");
    let events = reviews::events(db, &rig.review_id).await.expect("events");
    assert!(
        events
            .iter()
            .any(|e| e.detail.to_string().contains("send_outcome_unknown")),
        "{events:?}"
    );
    let msg = reviews::message(db, &rig.review_id, "initial")
        .await
        .expect("load")
        .expect("message");
    let history = msg.status_history.to_string();
    assert_eq!(
        history.matches(MessageStatus::Unknown.as_str()).count(),
        1,
        "the unknown outcome is recorded on the message once: {history}"
    );
    assert_eq!(result_status(&rig).await.as_deref(), Some("unconfirmed"));
}

/// A request a crash left at `sending` before any attempt was recorded (no message row).
async fn stuck_before_any_attempt(rig: &Rig) {
    let now = rig.clock.now();
    assert!(send_ordered(&rig.deps.db, &rig.review_id, now).await);
    assert!(
        reviews::message(&rig.deps.db, &rig.review_id, "initial")
            .await
            .expect("message")
            .is_none()
    );
}

#[tokio::test]
async fn a_send_resumed_from_sending_with_no_attempt_passes_the_opt_out_guard() {
    let rig = rig().await;
    stuck_before_any_attempt(&rig).await;
    let phone = request(&rig).await.phone;
    reviews::set_suppression(&rig.deps.db, &phone, true, "stop_keyword", rig.clock.now())
        .await
        .expect("suppress");
    handle(&rig.deps, &send_job(&rig)).await.expect("run");
    assert_eq!(request(&rig).await.status, ReviewStatus::OptedOut);
    assert_eq!(
        rig.sms.sends.load(Ordering::SeqCst),
        0,
        "no text to an opted-out phone"
    );
}

#[tokio::test]
async fn a_send_resumed_from_sending_with_no_attempt_waits_for_quiet_hours_to_end() {
    let rig = rig().await;
    stuck_before_any_attempt(&rig).await;
    // 02:00 in New York.
    rig.clock.set(afternoon() + TimeDelta::hours(11));
    handle(&rig.deps, &send_job(&rig)).await.expect("run");
    let req = request(&rig).await;
    assert_eq!(req.status, ReviewStatus::Deferred);
    assert!(req.send_at > rig.clock.now());
    assert_eq!(
        rig.sms.sends.load(Ordering::SeqCst),
        0,
        "nothing sent at night"
    );
}
