//! A waiter is woken without its completion message (issue 31): pub/sub is at-most-once, and the
//! per-waiter database re-check that covered a lost message cost 20,000 queries a second at
//! 10,000 calls waiting on a 10 s model. Now one backstop pass a second reads every waited-for
//! call in batches, and a subscription that comes back after a break wakes every waiter to look.

use grove_common::{completion::Completions, ledger::CallStatus};
use grove_tests::{
    TestDb,
    db::insert_call,
    paid::{REDIS_URL, live_completions},
};
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

#[tokio::test]
async fn the_backstop_wakes_the_waiters_of_final_calls_only() {
    let (_test_db, db) = TestDb::migrated().await;
    let completions = Completions::local();
    // More waiting calls than one batch holds, so the pass reads in several queries.
    let mut running = Vec::new();
    for _ in 0..600 {
        running.push(insert_call(&db, CallStatus::Running).await);
    }
    let finished = [
        insert_call(&db, CallStatus::Completed).await,
        insert_call(&db, CallStatus::Failed).await,
        insert_call(&db, CallStatus::Unpaid).await,
    ];
    let waiting: Vec<_> = running.iter().map(|id| completions.waiter(*id)).collect();
    let woken: Vec<_> = finished.iter().map(|id| completions.waiter(*id)).collect();
    let (stop, stopped) = watch::channel(false);
    completions.backstop(db.clone(), stopped);
    // No message is ever sent: only the backstop can wake them.
    for (id, w) in finished.iter().zip(&woken) {
        tokio::time::timeout(Duration::from_secs(10), w.notified())
            .await
            .unwrap_or_else(|_| panic!("the waiter of final call {id} was never woken"));
    }
    // Two more passes have run by now; a call still running wakes no one.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for w in waiting.iter().take(3).chain(waiting.iter().rev().take(3)) {
        assert!(
            tokio::time::timeout(Duration::ZERO, w.notified())
                .await
                .is_err(),
            "a waiter of a running call was woken"
        );
    }
    stop.send_replace(true);
}

#[tokio::test]
async fn a_subscription_back_after_a_break_wakes_every_waiter_to_look() {
    let client = redis::Client::open(REDIS_URL).expect("redis url");
    let (_worker, api, _) = live_completions(&client).await;
    let waiter = api.waiter(Uuid::now_v7());
    assert!(
        tokio::time::timeout(Duration::from_millis(300), waiter.notified())
            .await
            .is_err(),
        "nothing has happened to this call yet"
    );
    // The break: Redis drops its subscribers (a completion published now would be lost). Only
    // this test subscribes in this test binary; tests binaries run one at a time.
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut conn)
        .await
        .expect("client kill");
    assert!(killed >= 1, "the api's subscription was dropped");
    tokio::time::timeout(Duration::from_secs(10), waiter.notified())
        .await
        .expect("the resubscribed api woke its waiter to look at its call");
}
