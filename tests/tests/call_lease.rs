//! A call is started once (issue 8): `pending → running` is one statement that takes a lease,
//! the run renews it while the model works, and another delivery of the same job does nothing
//! while that lease is live. Only a run whose process died (its liveness lock is gone) or whose
//! time lease lapsed is taken over, and a run that was taken over cannot store its outcome.

use futures::StreamExt;
use grove_common::{
    completion,
    db::{
        calls::{self, Finisher, Runner},
        entities::call,
        liveness::Liveness,
    },
    jobs::{self, CoachingJob},
    ledger::{self, CallStatus, Start},
    queue::JobQueue,
};
use grove_tests::{
    TestDb,
    db::insert_call,
    llm::{Reply, caller_body},
    paid::{Options, REDIS_URL, spawn_paid},
    wait_until,
    x402::PayOptions,
};
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter,
    sea_query::{Alias, Expr},
};
use serde_json::json;
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};
use uuid::Uuid;

/// What a worker that died mid-run leaves behind: its lease in the past.
async fn lapse_lease(db: &DatabaseConnection, id: Uuid) {
    call::Entity::update_many()
        .col_expr(
            Alias::new("lease_until"),
            Expr::value(chrono::Utc::now() - chrono::TimeDelta::seconds(1)),
        )
        .filter(call::Column::Id.eq(id))
        .exec(db)
        .await
        .expect("lapse the lease");
}

fn runner(process: i64) -> Runner {
    Runner {
        run: Uuid::now_v7(),
        process,
    }
}

#[tokio::test]
async fn a_call_starts_once_and_is_taken_over_only_after_its_lease_lapses() {
    let (_test_db, db) = TestDb::migrated().await;
    let id = insert_call(&db, CallStatus::Pending).await;
    let (first, second) = (runner(1), runner(2));

    let started = ledger::start_attempt(&db, id, first).await.expect("start");
    assert!(matches!(started, Start::Started(ref c) if c.status == CallStatus::Running));
    match ledger::start_attempt(&db, id, second).await.expect("start") {
        Start::Busy(holder) => {
            assert_eq!(holder.lease_owner, Some(first.run.to_string()));
            assert_eq!(holder.lease_process, Some(1));
        }
        other => panic!("{other:?}"),
    }
    assert!(calls::renew_lease(&db, id, first.run).await.expect("renew"));
    assert!(
        !calls::renew_lease(&db, id, second.run)
            .await
            .expect("renew")
    );

    lapse_lease(&db, id).await;
    assert!(matches!(
        ledger::start_attempt(&db, id, second).await.expect("start"),
        Start::Started(_)
    ));
    assert!(
        !calls::renew_lease(&db, id, first.run).await.expect("renew"),
        "the run that lost its lease learns it at its next renewal"
    );
    let row = calls::load(&db, id).await.expect("load").expect("row");
    assert_eq!(row.attempts, 2);
}

/// A process renews all its runs' leases together, a statement per thousand runs: every run
/// that still holds its call is renewed and named in the answer, past the first thousand too;
/// a run whose call was taken over, or whose call ended, is not (and its lease is not moved).
#[tokio::test]
async fn one_renewal_renews_every_run_that_still_holds_its_call_and_names_no_other() {
    let (_test_db, db) = TestDb::migrated().await;
    let mut holding = vec![];
    let mut calls_held = vec![];
    for _ in 0..1_005 {
        let id = insert_call(&db, CallStatus::Pending).await;
        let run = runner(1);
        let started = ledger::start_attempt(&db, id, run).await.expect("start");
        assert!(matches!(started, Start::Started(_)));
        holding.push(run.run);
        calls_held.push(id);
    }
    // One run taken over (its lease lapsed), one whose call ended.
    let (taken, taken_call) = (holding[3], calls_held[3]);
    lapse_lease(&db, taken_call).await;
    let taker = runner(2);
    assert!(matches!(
        ledger::start_attempt(&db, taken_call, taker)
            .await
            .expect("take over"),
        Start::Started(_)
    ));
    let (ended, ended_call) = (holding[1_002], calls_held[1_002]);
    assert!(
        ledger::fail(&db, ended_call, Finisher::Run(ended), "ended")
            .await
            .expect("fail")
    );
    let before = chrono::Utc::now();
    lapse_lease(&db, calls_held[1_004]).await;

    let mut asked = holding.clone();
    asked.push(Uuid::now_v7()); // a run that never held anything
    let renewed = calls::renew_leases(&db, &asked).await.expect("renew");
    let expected: std::collections::HashSet<Uuid> = holding
        .iter()
        .copied()
        .filter(|r| *r != taken && *r != ended)
        .collect();
    assert_eq!(renewed, expected);
    let lease_of = async |id| calls::holder(&db, id).await.expect("holder").expect("row");
    let last = lease_of(calls_held[1_004]).await;
    assert!(
        last.lease_until.expect("lease") > before + chrono::TimeDelta::seconds(25),
        "the lapsed lease of a run past the first thousand was renewed: {last:?}"
    );
    let took = lease_of(taken_call).await;
    assert_eq!(
        took.lease_owner,
        Some(taker.run.to_string()),
        "the taker keeps it"
    );
    assert!(
        !calls::renew_lease(&db, taken_call, taken)
            .await
            .expect("renew"),
        "one run's renewal agrees"
    );
}

/// A run's lease ends with its process, not with a clock: while the process holding it lives,
/// others are refused; the moment it is gone (its liveness lock released, as a SIGKILL does),
/// one other run takes the call over, long before the time lease would lapse. The run that was
/// taken over cannot store an outcome over the new run's.
#[tokio::test]
async fn a_run_whose_process_died_is_taken_over_at_once_and_cannot_store_over_the_new_run() {
    let (test_db, db) = TestDb::migrated().await;
    let id = insert_call(&db, CallStatus::Pending).await;
    let dying = Liveness::claim(&db, &test_db.url)
        .await
        .expect("first process");
    let living = Liveness::claim(&db, &test_db.url)
        .await
        .expect("second process");
    let (first, second, third) = (
        runner(dying.key()),
        runner(living.key()),
        runner(living.key()),
    );
    assert!(matches!(
        ledger::start_attempt(&db, id, first).await.expect("start"),
        Start::Started(_)
    ));

    let Start::Busy(holder) = ledger::start_attempt(&db, id, second).await.expect("start") else {
        panic!("a live run holds the call");
    };
    assert!(living.is_alive(&db, dying.key()).await.expect("alive?"));
    assert_eq!(living.alive(&db).await.expect("alive").count(), 2);

    drop(dying);
    wait_until("the first process's lock to be released", async || {
        !living
            .is_alive(&db, holder.lease_process.expect("holder"))
            .await
            .expect("alive?")
    })
    .await;
    let until = holder.lease_until.expect("a time lease");
    assert!(until > chrono::Utc::now(), "the time lease has not lapsed");
    assert!(matches!(
        ledger::take_over(&db, id, &holder, second)
            .await
            .expect("take over"),
        Start::Started(_)
    ));
    // Another process that read the same dead holder loses the compare-and-set.
    assert!(matches!(
        ledger::take_over(&db, id, &holder, third)
            .await
            .expect("take over"),
        Start::Busy(_)
    ));

    // The dead run's late outcome is refused; the new run's is stored.
    assert!(
        ledger::complete(
            &db,
            id,
            Finisher::Run(first.run),
            json!({"run": "first"}),
            (1, 1),
            1,
            Some(answer("first")),
        )
        .await
        .expect("complete")
        .is_none()
    );
    assert!(
        !ledger::fail(&db, id, Finisher::Run(first.run), "late failure")
            .await
            .expect("fail")
    );
    assert_eq!(
        calls::load(&db, id)
            .await
            .expect("load")
            .expect("row")
            .status,
        CallStatus::Running
    );
    assert!(
        ledger::complete(
            &db,
            id,
            Finisher::Run(second.run),
            json!({"run": "second"}),
            (1, 1),
            1,
            Some(answer("second")),
        )
        .await
        .expect("complete")
        .is_some()
    );
    let stored = calls::load_result(&db, id)
        .await
        .expect("load")
        .expect("result");
    assert_eq!(stored.body, json!({"run": "second"}));
    let row = calls::load(&db, id).await.expect("load").expect("row");
    assert_eq!((row.status.as_str(), row.attempts), ("completed", 2));
    // The delivered answer is stored with the result it made, so the refused run's is not.
    let answers = calls::model_calls(&db, id, 0).await.expect("answers");
    let outcomes: Vec<_> = answers.iter().map(|a| a.outcome.clone()).collect();
    assert_eq!(outcomes, vec![json!({"ok": {"run": "second"}})]);
}

/// A delivered model answer's record, as a run stores it with its result.
fn answer(run: &str) -> calls::ModelCallRecord {
    calls::ModelCallRecord {
        run: 0,
        seq: 0,
        outcome: json!({"ok": {"run": run}}),
        tokens: (1, 1),
        http_attempts: 1,
    }
}

#[tokio::test]
async fn only_a_pending_call_starts() {
    let (_test_db, db) = TestDb::migrated().await;
    // `settling`: the payment's outcome is unknown; `unpaid`: it was refused; `failed` runs
    // again only once the API reopens it to `pending`.
    for status in [
        CallStatus::Settling,
        CallStatus::Unpaid,
        CallStatus::Failed,
        CallStatus::Completed,
    ] {
        let id = insert_call(&db, status).await;
        match ledger::start_attempt(&db, id, runner(1))
            .await
            .expect("start")
        {
            Start::Idle(s) => assert_eq!(s, status),
            other => panic!("{status}: {other:?}"),
        }
    }
    assert!(matches!(
        ledger::start_attempt(&db, Uuid::now_v7(), runner(1))
            .await
            .expect("start"),
        Start::Missing
    ));
}

#[tokio::test]
async fn a_duplicate_delivery_during_a_live_run_makes_no_second_model_call() {
    let rig = spawn_paid(Options {
        redis_workers: 2,
        ..Default::default()
    })
    .await;
    let namespace = rig.env["QUEUE_NAMESPACE"].clone();
    // Every "call done" notice, by call id: the original run's, and the duplicate's.
    let client = redis::Client::open(REDIS_URL).expect("redis");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    pubsub
        .subscribe(jobs::done_channel(&namespace))
        .await
        .expect("subscribe");
    let done: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&done);
    tokio::spawn(async move {
        let mut messages = pubsub.into_on_message();
        while let Some(msg) = messages.next().await {
            let id = completion::parse_message(msg.get_payload_bytes()).map(|(id, _)| id);
            if let (Some(id), Ok(mut all)) = (id, seen.lock()) {
                all.push(id.to_string());
            }
        }
    });

    rig.llm.script([Reply::Slow(Duration::from_secs(2))]);
    let path = "/api/v1/agents/mary/call";
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(path, &body, PayOptions::default()).await;
    let call = rig.spawn_paid_call(path, &body, &payment);
    wait_until("the model request", async || rig.llm.received() == 1).await;

    // The same job again while the first run is inside the model call (a redelivery).
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let row = call::Entity::find()
        .one(&db)
        .await
        .expect("load")
        .expect("the call");
    let queue = JobQueue::redis(&client, &namespace).await.expect("queue");
    queue
        .push(CoachingJob::new(row.id, "duplicate".into()))
        .await
        .expect("push the duplicate");

    let response = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("answered")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    let id = row.id.to_string();
    wait_until("both deliveries to finish", async || {
        done.lock()
            .map(|all| all.iter().filter(|d| **d == id).count() >= 2)
            .unwrap_or(false)
    })
    .await;
    assert_eq!(rig.llm.received(), 1, "one model call");
    assert_eq!(rig.llm.completed(), 1);
    let row = calls::load(&db, row.id).await.expect("load").expect("row");
    assert_eq!(row.status, CallStatus::Completed);
    assert_eq!(row.attempts, 1, "the duplicate never started the call");
}

/// A second result for a call that has one (a re-run that raced the first to the finish)
/// leaves the first standing and answers with it; the second's model answer is kept on record.
/// PostgreSQL writes this as one statement, SQLite as a transaction: both must agree.
#[tokio::test]
async fn a_call_keeps_its_first_result() {
    let (_test_db, db) = TestDb::migrated().await;
    let id = insert_call(&db, CallStatus::Running).await;
    let first = ledger::complete(
        &db,
        id,
        Finisher::Unleased,
        json!({"run": "first"}),
        (3, 4),
        1,
        None,
    )
    .await
    .expect("complete")
    .expect("stored");
    assert_eq!(
        (first.body.clone(), first.input_tokens, first.output_tokens),
        (json!({"run": "first"}), 3, 4)
    );
    let mut late = answer("late");
    late.seq = 1;
    let second = ledger::complete(
        &db,
        id,
        Finisher::Unleased,
        json!({"run": "late"}),
        (1, 1),
        1,
        Some(late),
    )
    .await
    .expect("complete")
    .expect("the call's result");
    assert_eq!(second.body, json!({"run": "first"}));
    assert_eq!(
        calls::load_result(&db, id)
            .await
            .expect("load")
            .expect("result")
            .body,
        json!({"run": "first"})
    );
    let answers = calls::model_calls(&db, id, 0).await.expect("answers");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].outcome, json!({"ok": {"run": "late"}}));
    let row = calls::load(&db, id).await.expect("load").expect("row");
    assert_eq!(row.status, CallStatus::Completed);
}
