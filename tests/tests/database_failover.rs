//! A database failover is a blip, not a restart (issue 27). Each test runs its own PostgreSQL
//! (`grove_tests::private_pg`) so that it can stop and start it without touching the shared
//! server: a restart drops every connection, the ones holding the workers' liveness locks too.
//! The workers stop taking jobs, take a lock under a new key once the database answers, keep
//! their runs, and go on; nothing restarts them. The api answers 503 with `Retry-After` while it
//! cannot reach the database, never 500, and before any payment.
//!
//! PostgreSQL only (`GROVE_TEST_DB=postgres`): on SQLite the liveness lock is a file lock, which
//! lives exactly as long as the process.

use grove_tests::{
    facilitator::SettleScript,
    free_port,
    llm::Reply,
    paid::{Options, PaidApp, spawn_paid},
    private_pg::PrivatePostgres,
    queue_rig::{new_question, worker_ready},
    wait_until,
    x402::PayOptions,
};
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use std::{
    collections::BTreeMap,
    process::Child,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

const PATH: &str = "/api/v1/agents/mary/call";

struct Workers(Vec<(Child, String)>);

impl Drop for Workers {
    fn drop(&mut self) {
        for (child, _) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Workers {
    fn start(paid: &PaidApp, n: usize, extra: &[(&str, &str)]) -> Self {
        Self(
            (0..n)
                .map(|_| {
                    let health = format!("127.0.0.1:{}", free_port());
                    let mut env = vec![("WORKER_HEALTH_ADDR", health.as_str())];
                    env.extend_from_slice(extra);
                    (paid.start_worker_process_with(&env), health)
                })
                .collect(),
        )
    }

    /// One worker, once its health endpoint says it is ready.
    async fn one_ready(paid: &PaidApp) -> Self {
        let workers = Self::start(paid, 1, &[]);
        let http = grove_common::http_client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let health = workers.0[0].1.clone();
        wait_until("the worker", async || worker_ready(&http, &health).await).await;
        workers
    }

    fn all_running(&mut self) -> bool {
        self.0
            .iter_mut()
            .all(|(c, _)| matches!(c.try_wait(), Ok(None)))
    }
}

/// The api and its workers over a private PostgreSQL.
async fn rig(pg: &PrivatePostgres, deadline_s: u64) -> PaidApp {
    let url = pg.database("grove").await;
    spawn_paid(Options {
        redis_workers: 0,
        deadline_s,
        extra_env: vec![
            ("DATABASE_URL".into(), url),
            ("REDIS_URL".into(), grove_tests::paid::REDIS_URL.into()),
            ("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()),
        ],
        ..Default::default()
    })
    .await
}

/// The liveness keys held now (`db::liveness`).
async fn liveness_keys(url: &str) -> Vec<i64> {
    let db = grove_common::db::connect_url(url).await.expect("db");
    let rows = db
        .query_all_raw(Statement::from_sql_and_values(
            DatabaseBackend::Postgres,
            "SELECT objid::bigint AS key FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND objsubid = 2 AND classid = $1::bigint::oid ORDER BY 1",
            [i64::from(grove_common::db::liveness::NAMESPACE).into()],
        ))
        .await
        .expect("pg_locks");
    let _ = db.close().await;
    rows.iter()
        .map(|r| r.try_get::<i64>("", "key").expect("key"))
        .collect()
}

/// One paying client: the identical request (same body, same payment) again on 409, 5xx and
/// transport errors until a 200. Returns every status it saw (0: transport error).
async fn pay_until_answered(paid: &PaidApp, payment: String, body: serde_json::Value) -> Vec<u16> {
    let mut seen = vec![];
    let give_up = Instant::now() + Duration::from_secs(90);
    loop {
        let sent = paid
            .app
            .client
            .post(paid.app.url(PATH))
            .header("content-type", "application/json")
            .header("payment-signature", &payment)
            .body(body.to_string())
            .send()
            .await;
        let status = sent.as_ref().map_or(0, |r| r.status().as_u16());
        seen.push(status);
        if status == 200 {
            return seen;
        }
        if status == 503 {
            let after: Option<u64> = sent
                .as_ref()
                .ok()
                .and_then(|r| r.headers().get("retry-after")?.to_str().ok()?.parse().ok());
            assert!(after.is_some(), "a 503 says when to come back");
        }
        assert!(
            status == 0 || status == 409 || status >= 502,
            "no retryable answer: {status} after {seen:?}"
        );
        assert!(Instant::now() < give_up, "never answered: {seen:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The chaos row "PostgreSQL restart, no supervisor", as a test: paid calls arrive while the
/// database goes away for 3 s and comes back; nothing restarts the workers.
#[tokio::test]
async fn a_postgres_restart_under_load_delivers_every_call_with_one_model_call_each_and_no_500() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    const CALLS: usize = 24;
    let pg = PrivatePostgres::start();
    let paid = rig(&pg, 20).await;
    let db_url = paid.env["DATABASE_URL"].clone();
    paid.llm
        .script(vec![Reply::Slow(Duration::from_secs(2)); CALLS * 3]);
    let mut workers = Workers::start(&paid, 2, &[]);
    let http = grove_common::http_client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("client");
    for (_, health) in &workers.0 {
        wait_until("a worker", async || worker_ready(&http, health).await).await;
    }
    let keys_before = liveness_keys(&db_url).await;
    assert_eq!(keys_before.len(), 2);

    // Signed before the fault (a challenge needs nothing from the database, but keep the
    // arrivals the only thing in flight when it goes).
    let mut prepared = vec![];
    for _ in 0..CALLS {
        let body = new_question();
        let payment = paid.payment_for(PATH, &body, PayOptions::default()).await;
        prepared.push((payment, body));
    }
    let paid = Arc::new(paid);
    let statuses = Arc::new(Mutex::new(BTreeMap::<u16, usize>::new()));
    let mut clients = vec![];
    let t0 = Instant::now();
    for (i, (payment, body)) in prepared.into_iter().enumerate() {
        let (paid, statuses) = (Arc::clone(&paid), Arc::clone(&statuses));
        // Spread over 6 s: some at the model when the database goes, some arriving while it
        // is gone, some after.
        let start = t0 + Duration::from_millis(250 * i as u64);
        clients.push(tokio::spawn(async move {
            tokio::time::sleep_until(start.into()).await;
            let seen = pay_until_answered(&paid, payment, body).await;
            let mut s = statuses.lock().unwrap_or_else(|e| e.into_inner());
            for st in seen {
                *s.entry(st).or_default() += 1;
            }
        }));
    }
    wait_until("calls at the model", async || paid.llm.received() >= 4).await;
    pg.down();
    let down = Instant::now();
    // What a managed database's failover looks like: gone for 3 s.
    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.up();
    let back = Instant::now();
    eprintln!("PostgreSQL down for {:.1}s", (back - down).as_secs_f64());

    for c in clients {
        c.await.expect("client");
    }
    let answered = back.elapsed();
    let statuses = statuses.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        workers.all_running(),
        "no worker exited: nothing restarted them"
    );
    assert!(!statuses.contains_key(&500), "never a 500: {statuses:?}");
    assert_eq!(statuses.get(&200), Some(&CALLS), "every call delivered");
    assert_eq!(paid.facilitator.transfers(), CALLS, "one transfer each");
    assert_eq!(
        paid.llm.received(),
        CALLS,
        "one model call per paid call: no live run was re-run"
    );
    // Each worker holds a lock under a new key.
    let keys_after = liveness_keys(&db_url).await;
    assert_eq!(keys_after.len(), 2);
    assert!(
        keys_after.iter().all(|k| !keys_before.contains(k)),
        "new owners: {keys_before:?} then {keys_after:?}"
    );
    for (_, health) in &workers.0 {
        wait_until("the workers ready again", async || {
            worker_ready(&http, health).await
        })
        .await;
    }
    eprintln!(
        "PostgreSQL restart (3 s) under {CALLS} paid calls, no supervisor: statuses {statuses:?}, every call answered {:.1}s after the database was back, {} model calls",
        answered.as_secs_f64(),
        paid.llm.received()
    );
}

#[tokio::test]
async fn while_the_database_is_down_a_paid_call_gets_503_with_retry_after_before_any_payment() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let pg = PrivatePostgres::start();
    let paid = rig(&pg, 20).await;
    let _workers = Workers::one_ready(&paid).await;
    let body = new_question();
    let payment = paid.payment_for(PATH, &body, PayOptions::default()).await;
    pg.down();
    let r = paid.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("2")
    );
    let answer: serde_json::Value = r.json().await.expect("json");
    assert_eq!(answer["error"]["code"], "database_unavailable");
    assert_eq!(
        paid.facilitator.settle_calls(),
        0,
        "nothing settled without a database to record it"
    );
    assert_eq!(paid.app.get("/readyz").await.status(), 503);
    // Back: the identical request (same payment) is served, once.
    pg.up();
    wait_until("the api to reach its database", async || {
        paid.app.get("/readyz").await.status() == 200
    })
    .await;
    let r = paid.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(paid.facilitator.transfers(), 1);
}

/// The money moves, and the database goes away for longer than the pool waits before its outcome
/// is written: the paid request waits for the database (up to `outage::RIDE_OUT`) rather than
/// answering 503, so the caller gets what it paid for on its first try, with one transfer and
/// one model call.
#[tokio::test]
async fn a_settlement_answered_while_the_database_is_down_is_recorded_once_it_is_back() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let pg = PrivatePostgres::start();
    let paid = rig(&pg, 60).await;
    let _workers = Workers::one_ready(&paid).await;
    let body = new_question();
    let payment = paid.payment_for(PATH, &body, PayOptions::default()).await;
    // The facilitator moves the money at once and holds its answer while the database stops.
    paid.facilitator
        .script_next(SettleScript::Slow(Duration::from_secs(3)));
    let call = paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the settlement to reach the facilitator", async || {
        paid.facilitator.settle_calls() == 1
    })
    .await;
    pg.down();
    wait_until("the settlement's answer", async || {
        paid.app
            .metrics()
            .await
            .contains("grove_settlements_total{result=\"settled\"} 1")
    })
    .await;
    assert_eq!(paid.facilitator.transfers(), 1);
    // The outage outlasts the pool's own patience (sqlx waits up to 10 s for a connection):
    // its length is the fault staged here, not a wait for something to happen.
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(!call.is_finished(), "answered while the database was down");
    pg.up();
    let r = call.await.expect("task").expect("answered");
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    assert_eq!(paid.facilitator.transfers(), 1);
    assert_eq!(paid.facilitator.settle_calls(), 1);
    assert_eq!(paid.llm.received(), 1, "one model call");
}

#[tokio::test]
async fn a_worker_whose_lock_connection_is_cut_takes_a_new_lock_and_keeps_working() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let pg = PrivatePostgres::start();
    let paid = rig(&pg, 20).await;
    let db_url = paid.env["DATABASE_URL"].clone();
    let mut workers = Workers::one_ready(&paid).await;
    let before = liveness_keys(&db_url).await;
    // The database drops the lock's connection (an operator, a proxy, a network cut).
    let db = grove_common::db::connect_url(&db_url).await.expect("db");
    db.execute_unprepared(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' \
         AND objsubid = 2 AND classid = {}",
        grove_common::db::liveness::NAMESPACE
    ))
    .await
    .expect("terminate");
    wait_until("a lock under a new key", async || {
        let now = liveness_keys(&db_url).await;
        now.len() == 1 && now != before
    })
    .await;
    assert!(workers.all_running());
    let r = paid.pay_and_call(PATH, &new_question(), None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(paid.llm.received(), 1);
}

#[tokio::test]
async fn a_worker_exits_non_zero_when_the_database_stays_away_past_its_limit() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let pg = PrivatePostgres::start();
    let paid = rig(&pg, 20).await;
    let mut workers = Workers::start(&paid, 1, &[("DATABASE_RECOVERY_LIMIT_S", "2")]);
    let http = grove_common::http_client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(1))
        .build()
        .expect("client");
    let health = workers.0[0].1.clone();
    wait_until("the worker", async || worker_ready(&http, &health).await).await;
    pg.down();
    let gone = Instant::now();
    wait_until("the worker to report the database away", async || {
        !worker_ready(&http, &health).await
    })
    .await;
    let mut status = None;
    wait_until("the worker to give up", async || {
        status = workers.0[0].0.try_wait().expect("wait");
        status.is_some()
    })
    .await;
    let status = status.expect("exited");
    assert!(!status.success(), "exit status {status}");
    eprintln!(
        "PostgreSQL gone (limit 2 s): the worker exited with {status} after {:.1}s",
        gone.elapsed().as_secs_f64()
    );
}

/// A restart drops every process's lock at once, and each notices on its own schedule: a
/// process whose own lock is gone judges nobody dead (the others have not taken theirs again
/// yet either) until it holds a lock again and its grace has run. A look for dead runs that
/// began before the outage and was answered after it took a live run and asked the model a
/// second time (CI, 2026-12-05: 26 model calls for 24 paid calls in the test above).
#[tokio::test]
async fn a_process_whose_own_lock_is_gone_judges_no_other_process_dead() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    use grove_common::db::liveness::Liveness;
    let (test_db, db) = grove_tests::TestDb::migrated().await;
    let claim = async || Liveness::claim(&db, &test_db.url).await.expect("claim");
    let (kept, looking, gone) = (claim().await, claim().await, claim().await);
    let gone_key = gone.key();

    // One process's lock gone, the looker's held: that process is dead to it.
    grove_tests::db::cut_liveness_lock(&db, gone_key).await;
    assert!(!looking.is_alive(&db, gone_key).await.expect("alive?"));

    // The looker's own lock gone too (its watch may not have noticed): nobody is dead to it.
    grove_tests::db::cut_liveness_lock(&db, looking.key()).await;
    assert!(looking.is_alive(&db, gone_key).await.expect("alive?"));
    assert!(looking.is_alive(&db, kept.key()).await.expect("alive?"));
    // A process that kept its lock sees both as gone.
    let seen = kept.alive(&db).await.expect("alive");
    assert!(!seen.contains(gone_key) && !seen.contains(looking.key()));

    // Once the looker holds a new lock, the grace: still nobody dead to it.
    let old = looking.reclaim(&db).await.expect("reclaim");
    assert_ne!(old, looking.key());
    assert!(looking.is_alive(&db, gone_key).await.expect("alive?"));
}

/// A takeover is decided on a lookup and done by a later write; a restart between the two (the
/// write waiting for a connection through the outage) must not take a run whose process is
/// about to move it to a new key. The taker's own lock, held when the write runs, is in the
/// write: gone with the restart, the write takes nothing.
#[tokio::test]
async fn a_takeover_decided_before_a_restart_takes_nothing_after_it() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    use grove_common::{
        db::{calls, liveness::Liveness},
        ledger::{self, CallStatus, Start},
    };
    let (test_db, db) = grove_tests::TestDb::migrated().await;
    let claim = async || Liveness::claim(&db, &test_db.url).await.expect("claim");
    let (holder_process, taker) = (claim().await, claim().await);
    let runner = |process| calls::Runner {
        run: uuid::Uuid::now_v7(),
        process,
    };
    let id = grove_tests::db::insert_call(&db, CallStatus::Pending).await;
    let held = runner(holder_process.key());
    assert!(matches!(
        ledger::start_attempt(&db, id, held).await.expect("start"),
        Start::Started(_)
    ));

    // The taker's look: the holder's lock is gone first (its backend exited first), the taker's
    // still held, so the holder looks dead.
    grove_tests::db::cut_liveness_lock(&db, holder_process.key()).await;
    assert!(
        !taker
            .is_alive(&db, holder_process.key())
            .await
            .expect("alive?")
    );
    let seen = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    // Then the taker's lock goes too (the same restart), before its write runs.
    grove_tests::db::cut_liveness_lock(&db, taker.key()).await;
    let took = ledger::take_over(&db, id, &seen, runner(taker.key()))
        .await
        .expect("take over");
    assert!(matches!(took, Start::Busy(_)), "nothing taken: {took:?}");
    let lease = calls::holder(&db, id)
        .await
        .expect("holder")
        .expect("lease");
    assert_eq!(
        lease.lease_owner,
        Some(held.run.to_string()),
        "still the first run's"
    );
}
