//! A run started with its settlement (issue 12): the embedded api starts a settled coaching
//! call's run in the transaction that records the settlement (`ledger::start_settled`), and the
//! worker beside it does the work without starting it again. A job that waited in the queue
//! past a renewal period renews the lease first, and leaves a call whose lease another run took.

use grove_common::ledger::{self, CallStatus};
use grove_common::{
    clock::{Clock, SystemClock},
    completion::Completions,
    config::{LlmConfig, LlmProviderKind},
    db::{
        calls::{self, Holder, Runner},
        entities::call,
        liveness::Liveness,
        write,
    },
    jobs::{CoachingJob, Started},
    queue::JobQueue,
    schema::SchemaRegistry,
};
use grove_tests::{
    TestDb,
    db::insert_call,
    llm::{FakeLlm, Reply},
    wait_until,
};
use grove_worker::{
    coaching::Engine,
    jobs::{Deps, run_coaching},
    llm::{self, RetryPolicy},
    sms::{OutboxProvider, SmsProvider},
};
use sea_orm::DatabaseConnection;
use std::{sync::Arc, time::Duration};
use tokio::time::{Instant, timeout};
use uuid::Uuid;

struct Rig {
    deps: Arc<Deps>,
    llm: FakeLlm,
}

/// A worker beside the loopback model, which counts the answers it gives.
async fn worker(test_db: &TestDb, db: &DatabaseConnection) -> Rig {
    let liveness = Liveness::claim(db, &test_db.url)
        .await
        .expect("liveness lock");
    let llm = FakeLlm::start().await;
    let config = LlmConfig::new(LlmProviderKind::OpenAi, &llm.openai_base(), None);
    let provider = llm::from_config(&config, RetryPolicy::LLM).expect("client");
    let schemas = Arc::new(SchemaRegistry::load().expect("schemas"));
    let engine = Engine::new(provider, schemas, LlmProviderKind::OpenAi, CALL_DEADLINE);
    let deps = Arc::new(Deps {
        runs: grove_common::ledger::Runs::new(db.clone(), 64),
        db: db.clone(),
        completions: Completions::local(),
        engine: Some(engine),
        sms: Arc::new(OutboxProvider) as Arc<dyn SmsProvider>,
        clock: Arc::new(SystemClock) as Arc<dyn Clock>,
        queue: JobQueue::memory().0,
        public_base_url: "https://grove.test".into(),
        status_callback: None,
        sweeps: Arc::default(),
        liveness,
        concurrency: grove_common::config::DEFAULT_WORKER_CONCURRENCY,
        load: Default::default(),
        leases: Default::default(),
    });
    Rig { deps, llm }
}

const CALL_DEADLINE: Duration = Duration::from_secs(20);

/// `settling → running` for `runner`, as the settlement's transaction does it.
async fn start_settled(db: &DatabaseConnection, id: Uuid, runner: Runner) -> Option<call::Model> {
    let started = write::update_calls(db, ledger::start_settled(id, runner))
        .await
        .expect("start with the settlement");
    assert!(started.len() <= 1);
    started.into_iter().next()
}

fn new_runner(process: i64) -> Runner {
    Runner {
        run: Uuid::now_v7(),
        process,
    }
}

/// A settling call whose run its settlement started for `deps`'s worker.
async fn started_here(db: &DatabaseConnection, deps: &Deps) -> (Uuid, Runner, call::Model) {
    let id = insert_call(db, CallStatus::Settling).await;
    let runner = new_runner(deps.liveness.key());
    let started = start_settled(db, id, runner).await.expect("started");
    (id, runner, started)
}

/// Another run of the same process takes the call over from `runner`, as the recovery sweep's
/// redelivery does after the run looked stalled; the run that took it.
async fn take_over(db: &DatabaseConnection, id: Uuid, runner: Runner) -> Runner {
    let from = Holder {
        lease_owner: Some(runner.run.to_string()),
        lease_process: Some(runner.process),
        lease_until: None,
    };
    let taker = new_runner(runner.process);
    assert!(matches!(
        ledger::take_over(db, id, &from, taker)
            .await
            .expect("take over"),
        ledger::Start::Started(_)
    ));
    taker
}

fn job(runner: Runner, call: call::Model, at: Instant) -> CoachingJob {
    CoachingJob {
        started: Some(Started {
            runner,
            call: Arc::new(call),
            at,
        }),
        ..CoachingJob::new(Uuid::nil(), "req-started".into())
    }
}

/// The job's work, with a bound: a worker that started the run again would find it held by
/// its own process and wait for the lease, not fail.
async fn work(job: CoachingJob, deps: &Arc<Deps>) {
    timeout(Duration::from_secs(20), run_coaching(job, Arc::clone(deps)))
        .await
        .expect("the job ends without waiting on its own lease")
        .expect("the job");
}

async fn load(db: &DatabaseConnection, id: Uuid) -> call::Model {
    calls::load(db, id).await.expect("load").expect("row")
}

#[tokio::test]
async fn a_run_started_with_its_settlement_is_worked_once_and_not_started_again() {
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    let (id, runner, started) = started_here(&db, &deps).await;
    assert_eq!((started.status, started.attempts), (CallStatus::Running, 1));
    let holder = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    assert_eq!(holder.lease_owner, Some(runner.run.to_string()));
    assert_eq!(holder.lease_process, Some(runner.process));
    // A settlement decides a call once: nothing else starts it from `settling` again.
    assert!(
        start_settled(&db, id, new_runner(runner.process))
            .await
            .is_none()
    );

    work(job(runner, started, Instant::now()), &deps).await;
    let row = load(&db, id).await;
    assert_eq!(
        row.status,
        CallStatus::Completed,
        "the run did its work and stored it"
    );
    assert_eq!(
        row.attempts, 1,
        "one attempt: the worker did not start the run again"
    );
    assert_eq!(llm.completed(), 1, "one model call");
}

#[tokio::test]
async fn only_a_settling_call_is_started_with_its_settlement() {
    let (_test_db, db) = TestDb::migrated().await;
    for s in [
        CallStatus::Pending,
        CallStatus::Running,
        CallStatus::Unpaid,
        CallStatus::Failed,
        CallStatus::Completed,
    ] {
        let id = insert_call(&db, s).await;
        assert!(start_settled(&db, id, new_runner(1)).await.is_none(), "{s}");
        assert_eq!(load(&db, id).await.status, s);
    }
}

#[tokio::test]
async fn a_started_job_that_waited_renews_its_lease_and_works() {
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    let (id, runner, started) = started_here(&db, &deps).await;

    let queued_since = Instant::now() - calls::LEASE_RENEW_EVERY * 2;
    work(job(runner, started, queued_since), &deps).await;
    let row = load(&db, id).await;
    assert_eq!((row.status, row.attempts), (CallStatus::Completed, 1));
    assert_eq!(llm.completed(), 1);
}

#[tokio::test]
async fn a_started_job_that_waited_leaves_a_call_another_run_took() {
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    let (id, runner, started) = started_here(&db, &deps).await;
    // While the job waited, the recovery sweep's redelivery took the call over.
    let taker = take_over(&db, id, runner).await;

    let queued_since = Instant::now() - calls::LEASE_RENEW_EVERY * 2;
    work(job(runner, started, queued_since), &deps).await;
    let row = load(&db, id).await;
    assert_eq!(
        (row.status, row.attempts, row.error),
        (CallStatus::Running, 2, None),
        "the call is the taker's"
    );
    assert_eq!(llm.received(), 0, "the job did no work: no model call");
    let holder = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    assert_eq!(holder.lease_owner, Some(taker.run.to_string()));
}

/// A run that loses its lease while it waits on the model (the call was taken over after this
/// run's process looked stalled) stops at the process's next renewal, without waiting for the
/// model's answer, and stores nothing over the run that took the call.
#[tokio::test]
async fn a_run_whose_lease_is_taken_while_it_waits_on_the_model_stops() {
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    llm.script(vec![Reply::Held]);
    let (id, runner, started) = started_here(&db, &deps).await;
    let run = tokio::spawn(run_coaching(
        job(runner, started, Instant::now()),
        Arc::clone(&deps),
    ));
    wait_until("the model is asked", async || llm.received() == 1).await;

    let taker = take_over(&db, id, runner).await;
    // The bound turns a run that kept waiting into a failure: the model never answers.
    timeout(calls::LEASE_RENEW_EVERY * 3, run)
        .await
        .expect("the run stops once a renewal finds its lease gone")
        .expect("the job's task")
        .expect("the job");
    assert_eq!(llm.completed(), 0, "it stopped before any answer");
    let row = load(&db, id).await;
    assert_eq!(
        (row.status, row.attempts, row.error),
        (CallStatus::Running, 2, None),
        "the call is the taker's"
    );
    let holder = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    assert_eq!(holder.lease_owner, Some(taker.run.to_string()));
    llm.release();
}

/// A run whose start was answered only after its process took a new liveness key (the start
/// was sent before a database outage and answered after it, when the runs then held had been
/// moved to the new key) moves itself to the new key before it asks the model: under the old
/// key every other process would take the call over as a dead one's and ask the model again.
#[tokio::test]
async fn a_run_started_under_its_process_old_key_moves_to_the_new_one_before_the_model() {
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    llm.script(vec![Reply::Held]);
    let id = insert_call(&db, CallStatus::Settling).await;
    // The key this process held before the outage.
    let runner = new_runner(deps.liveness.key() + 1);
    let started = start_settled(&db, id, runner).await.expect("started");
    let worker = Arc::clone(&deps);
    let run =
        tokio::spawn(
            async move { grove_worker::jobs::run_started(&worker, started, runner).await },
        );
    wait_until("the model is asked", async || llm.received() == 1).await;
    let holder = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    assert_eq!(
        (holder.lease_owner, holder.lease_process),
        (Some(runner.run.to_string()), Some(deps.liveness.key())),
        "the run holds its call under the process's key of now"
    );
    llm.release();
    run.await.expect("the run's task").expect("the run");
    let row = load(&db, id).await;
    assert_eq!((row.status, row.attempts), (CallStatus::Completed, 1));
    assert_eq!(llm.received(), 1, "one model call");
}

/// A job that began waiting on a live run before its process lost its liveness lock to a
/// database outage, and finds the run's process dead once the outage is over, takes the call
/// over under the key its process holds now: a takeover's write takes a call only under a lock
/// still held, and the key the job began with went with the outage. (Offering the old key, it
/// waited out `WAIT_FOR_LIVE_RUN`, 5 minutes, leaving the call to the takeover loop.)
#[tokio::test]
async fn a_job_waiting_through_an_outage_takes_a_dead_run_over_under_the_new_key() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (test_db, db) = TestDb::migrated().await;
    let Rig { deps, llm } = worker(&test_db, &db).await;
    let holder = Liveness::claim(&db, &test_db.url).await.expect("holder");
    let id = insert_call(&db, CallStatus::Settling).await;
    start_settled(&db, id, new_runner(holder.key()))
        .await
        .expect("held by the other process's run");

    // The outage: this process's lock goes first; the job starts meanwhile (its key still the
    // old one) and finds the call held by a process it cannot judge dead.
    grove_tests::db::cut_liveness_lock(&db, deps.liveness.key()).await;
    let job = CoachingJob::new(id, "req-outage".into());
    let run = tokio::spawn(run_coaching(job, Arc::clone(&deps)));
    tokio::task::yield_now().await;
    // The other process does not come back; this one takes a new key.
    grove_tests::db::cut_liveness_lock(&db, holder.key()).await;
    let old = deps.liveness.reclaim(&db).await.expect("a new key");
    assert_ne!(old, deps.liveness.key());

    // After the grace (`RECLAIM_GRACE`, 10 s) the holder is dead to this process.
    timeout(Duration::from_secs(30), run)
        .await
        .expect("the job takes the call over after the grace, not after 5 minutes")
        .expect("the job's task")
        .expect("the job");
    let row = load(&db, id).await;
    assert_eq!((row.status, row.attempts), (CallStatus::Completed, 2));
    assert_eq!(llm.received(), 1, "one model call: the holder never asked");
}
