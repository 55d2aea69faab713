//! A run's start and its result share statements on PostgreSQL when they queue (issue 31,
//! `ledger::Runs`), and each gets the answer it would have got alone: a start takes its own
//! lease (or learns who holds the call, or why it does not run), a result completes its own
//! call once with its own body and model answer, or is refused to a run that no longer holds
//! the call; a lost answer is each member's, and each rides it out to its own answer.
//! PostgreSQL only (SQLite's writes are their callers', together by group commit).
//!
//! The tests run on one thread: every write of a `join_all` reaches the batcher before its
//! runner does, so what shares a statement is known without timing anything.

use futures::future::join_all;
use grove_common::{
    db::calls::{Finisher, ModelCallRecord, Runner},
    ledger::{self, CallStatus, Claims, Outcomes, Runs, Start, Stored},
};
use grove_tests::{
    TestDb,
    ledger_rows::{proxied, settle, settling_calls},
    pg_proxy::Cut,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

fn runner() -> Runner {
    Runner {
        run: Uuid::now_v7(),
        process: 7,
    }
}

/// `n` calls whose payments settled: each waits for a run.
async fn pending_calls(db: &DatabaseConnection, prefix: &str, n: usize) -> Vec<Uuid> {
    let ids = settling_calls(&Claims::new(db.clone(), 1), prefix, n).await;
    let outcomes = Outcomes::new(db.clone(), 1);
    for id in &ids {
        assert!(settle(&outcomes, *id, "0xpaid").await.expect("settled"));
    }
    ids
}

/// A call's status, attempts and lease owner, as stored.
async fn lease(db: &DatabaseConnection, id: Uuid) -> (String, i32, Option<String>) {
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            r#"SELECT "status", "attempts", "lease_owner" FROM "calls" WHERE "id" = $1"#,
            [id.into()],
        ))
        .await
        .expect("read")
        .expect("the call");
    (
        row.try_get("", "status").expect("status"),
        row.try_get("", "attempts").expect("attempts"),
        row.try_get("", "lease_owner").expect("owner"),
    )
}

async fn count(db: &DatabaseConnection, table: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            format!(r#"SELECT count(*) AS "n" FROM "{table}""#),
        ))
        .await
        .expect("count")
        .expect("a row");
    row.try_get("", "n").expect("n")
}

fn started(s: &Start) -> Uuid {
    match s {
        Start::Started(call) => call.id,
        other => panic!("expected a started call, got {other:?}"),
    }
}

/// A result with its own body and the model answer it came from.
fn result(i: usize) -> Stored {
    Stored {
        body: json!({"reply": format!("answer {i}"), "numbers": [i, 1.5], "note": "é \" \\"}),
        tokens: (100 + i as u64, 200),
        model_calls: 1,
        answer: Some(ModelCallRecord {
            run: 1,
            seq: 1,
            outcome: json!({"ok": i}),
            tokens: (100 + i as u64, 200),
            http_attempts: 1,
        }),
    }
}

fn body(i: usize) -> Value {
    result(i).body
}

#[tokio::test]
async fn starts_that_arrive_together_share_a_statement_and_each_takes_its_own_lease() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    let runs = Runs::new(db.clone(), 64);
    let ids = pending_calls(&db, "s", 10).await;
    // The last call's run went away without renewing its lease: it has lapsed.
    db.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        r#"UPDATE "calls" SET "status" = 'running', "attempts" = 1, "lease_owner" = 'gone',
            "lease_until" = now() - interval '1 minute' WHERE "id" = $1"#,
        [ids[9].into()],
    ))
    .await
    .expect("lapse");
    let unpaid = settling_calls(&Claims::new(db.clone(), 1), "unpaid", 1).await[0];
    // A call another run holds under a live lease.
    let held = pending_calls(&db, "held", 1).await[0];
    let holder = runner();
    started(&runs.start_attempt(held, holder).await.expect("start"));
    assert_eq!(runs.shared().0, 0, "a lone start runs the single statement");
    let runners: Vec<Runner> = ids.iter().map(|_| runner()).collect();
    let second = runner();

    let mut together: Vec<_> = ids
        .iter()
        .zip(&runners)
        .map(|(id, r)| runs.start_attempt(*id, *r))
        .collect();
    // A second run of the first call; a call whose payment has not settled; no call at all.
    together.push(runs.start_attempt(ids[0], second));
    together.push(runs.start_attempt(unpaid, runner()));
    together.push(runs.start_attempt(Uuid::now_v7(), runner()));
    together.push(runs.start_attempt(held, runner()));
    let answers: Vec<Start> = join_all(together)
        .await
        .into_iter()
        .map(|a| a.expect("a start answers"))
        .collect();

    for (i, (id, r)) in ids.iter().zip(&runners).enumerate() {
        assert_eq!(started(&answers[i]), *id, "its own call");
        let (status, attempts, owner) = lease(&db, *id).await;
        assert_eq!(status, "running");
        assert_eq!(owner, Some(r.run.to_string()), "its own lease");
        assert_eq!(attempts, if i == 9 { 2 } else { 1 }, "one more attempt");
    }
    match &answers[10] {
        Start::Busy(holder) => {
            assert_eq!(holder.lease_owner, Some(runners[0].run.to_string()));
        }
        other => panic!("the second run should find the call held, got {other:?}"),
    }
    assert_eq!(lease(&db, ids[0]).await.1, 1, "the second run took nothing");
    assert!(matches!(answers[11], Start::Idle(CallStatus::Settling)));
    assert!(matches!(answers[12], Start::Missing));
    match &answers[13] {
        Start::Busy(h) => assert_eq!(h.lease_owner, Some(holder.run.to_string())),
        other => panic!("a live lease is its run's, got {other:?}"),
    }
    assert_eq!(
        lease(&db, held).await.1,
        1,
        "nothing taken from a live lease"
    );
    // The ten, the unpaid call, the missing one and the held one shared a statement; the
    // second run of the first call was written alone.
    assert_eq!(runs.shared().0, 13);
}

#[tokio::test]
async fn results_that_arrive_together_share_a_statement_and_each_completes_its_own_call() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db) = TestDb::migrated().await;
    let runs = Runs::new(db.clone(), 64);
    let ids = pending_calls(&db, "r", 10).await;
    let mut runners = Vec::new();
    for id in &ids {
        let r = runner();
        started(&ledger::start_attempt(&db, *id, r).await.expect("start"));
        runners.push(r);
    }
    // Call 8 was taken over by another run; call 9 has its result already.
    let (taken, done) = (ids[8], ids[9]);
    db.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        r#"UPDATE "calls" SET "lease_owner" = 'another run' WHERE "id" = $1"#,
        [taken.into()],
    ))
    .await
    .expect("take over");
    let first = runs
        .complete(done, Finisher::Run(runners[9].run), result(9))
        .await
        .expect("stored")
        .expect("its result");
    assert_eq!(
        runs.shared().1,
        0,
        "a lone result runs the single statement"
    );

    let mut together: Vec<_> = (0..8)
        .map(|i| runs.complete(ids[i], Finisher::Run(runners[i].run), result(i)))
        .collect();
    // The first call's result again; the call taken over; a repeat of the done call by
    // something that holds no lease.
    together.push(runs.complete(ids[0], Finisher::Run(runners[0].run), result(0)));
    together.push(runs.complete(taken, Finisher::Run(runners[8].run), result(8)));
    together.push(runs.complete(done, Finisher::Unleased, result(99)));
    let answers: Vec<_> = join_all(together)
        .await
        .into_iter()
        .map(|a| a.expect("a result answers"))
        .collect();

    for (i, id) in ids[..8].iter().enumerate() {
        let stored = answers[i].as_ref().expect("its result");
        assert_eq!(stored.call_id, *id);
        assert_eq!(stored.body, body(i), "its own body");
        let read = grove_common::db::calls::load_result(&db, *id)
            .await
            .expect("read")
            .expect("stored");
        assert_eq!(read, *stored, "the result read back is the one answered");
        assert_eq!(lease(&db, *id).await.0, "completed");
    }
    assert!(answers[8].is_none(), "a call completes once");
    assert!(answers[9].is_none(), "a run taken over stores nothing");
    assert_eq!(lease(&db, taken).await.0, "running");
    assert_eq!(
        answers[10].as_ref().expect("the first result"),
        &first,
        "the first result stands"
    );
    assert_eq!(count(&db, "results").await, 9);
    assert_eq!(count(&db, "model_calls").await, 9, "one model answer each");
    // The eight, the taken call and the unleased repeat shared a statement.
    assert_eq!(runs.shared().1, 10);
}

/// Batches whose answers are lost after they committed: each start finds its own lease, each
/// result its own result, and nothing is written twice.
#[tokio::test]
async fn batches_of_starts_and_results_whose_answers_are_lost_give_each_its_own() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let (_test_db, db, proxy, through) = proxied().await;
    let ids = pending_calls(&db, "lost", 4).await;
    let runs = Runs::new(through, 64);
    let runners: Vec<Runner> = ids.iter().map(|_| runner()).collect();

    proxy.cut_next("json_to_recordset", Cut::AnswerLost);
    let starts = join_all(
        ids.iter()
            .zip(&runners)
            .map(|(id, r)| runs.start_attempt(*id, *r)),
    )
    .await;
    assert_eq!(proxy.cuts(), 1, "the starts' answer was lost");
    for ((id, r), s) in ids.iter().zip(&runners).zip(starts) {
        assert_eq!(started(&s.expect("a start answers")), *id);
        let (_, attempts, owner) = lease(&db, *id).await;
        assert_eq!((attempts, owner), (1, Some(r.run.to_string())));
    }

    proxy.cut_next("json_to_recordset", Cut::AnswerLost);
    let results =
        join_all((0..4).map(|i| runs.complete(ids[i], Finisher::Run(runners[i].run), result(i))))
            .await;
    assert_eq!(proxy.cuts(), 2, "the results' answer was lost");
    for (i, r) in results.into_iter().enumerate() {
        let stored = r.expect("a result answers").expect("its result");
        assert_eq!((stored.call_id, stored.body), (ids[i], body(i)));
    }
    assert_eq!(count(&db, "results").await, 4);
    assert_eq!(count(&db, "model_calls").await, 4);
}
