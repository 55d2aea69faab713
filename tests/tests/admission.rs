//! Admission before payment (issue 31): past what the workers can finish within
//! `CALL_DEADLINE_S`, an unpaid coaching request (HTTP or MCP) gets `503 over_capacity` with
//! `Retry-After` instead of a price, so nobody pays for a call that would time out in the queue;
//! a request carrying a payment is always admitted. Counted under overload: every request either
//! was refused before any settlement or was settled and delivered; no call was settled and then
//! timed out, and the model ran once per settled call.
//!
//! Each runs embedded (the api reads its worker's meter) and distributed (Redis and a worker
//! reporting its load, which the api reads every second).

use grove_tests::{
    llm::{Reply, caller_body},
    mcp::{self, assert_refused, call, tool_arguments},
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::PayOptions,
};
use serde_json::{Value, json};
use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering::SeqCst},
    },
    time::Duration,
};

const CALL: &str = "/api/v1/agents/mary/call";

fn options(redis_workers: usize, concurrency: usize, deadline_s: u64) -> Options {
    Options {
        redis_workers,
        deadline_s,
        extra_env: vec![("WORKER_CONCURRENCY".into(), concurrency.to_string())],
        ..Default::default()
    }
}

/// A coaching body of its own (a distinct request per caller).
fn question(n: usize) -> Value {
    let mut body = caller_body("diagnose_growth");
    let text = body["messages"][0]["content"].as_str().unwrap_or_default();
    body["messages"][0]["content"] = json!(format!("{text} (caller {n})"));
    body
}

/// The value of one exact series line in `/metrics`.
async fn gauge(rig: &PaidApp, name: &str) -> Option<f64> {
    let text = rig.app.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Waits until the api knows the workers' capacity (a distributed worker reports every second).
async fn capacity_known(rig: &PaidApp, slots: f64) {
    wait_until("the api knows the workers' capacity", async || {
        gauge(rig, "grove_admission_capacity").await == Some(slots)
    })
    .await;
}

fn retry_after(r: &reqwest::Response) -> u64 {
    r.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("a Retry-After in seconds")
}

/// Two slots and a model that holds its answers: two paid calls fill them (no run has finished,
/// so nothing may queue), a third unpaid request is refused over HTTP and MCP with nothing
/// settled, a payment arriving without a fresh quote is still admitted, and once the model
/// answers every paid call is delivered, each settled once and run once.
async fn full_slots_refuse_new_calls_and_admit_payments(redis_workers: usize) {
    // A long deadline: the held runs must outlast the MCP client's start-up on a busy machine.
    let rig = spawn_paid(options(redis_workers, 2, 120)).await;
    capacity_known(&rig, 2.0).await;
    rig.llm.script([Reply::Held, Reply::Held, Reply::Held]);
    let (a, b, c, d) = (question(1), question(2), question(3), question(4));
    let quote_a = rig.challenge(CALL, &a).await;
    let quote_b = rig.challenge(CALL, &b).await;
    // A payment signed now from a quote, sent later without asking for a fresh one.
    let pay_d = rig.wallet.pay(&quote_a, PayOptions::default());

    let paid_a = rig.spawn_paid_call(CALL, &a, &rig.wallet.pay(&quote_a, PayOptions::default()));
    let paid_b = rig.spawn_paid_call(CALL, &b, &rig.wallet.pay(&quote_b, PayOptions::default()));
    wait_until("both calls hold the slots at the model", async || {
        rig.llm.received() == 2
    })
    .await;
    let refused = rig.app.post_json(CALL, &c, &[]).await;
    assert_eq!(refused.status(), 503);
    assert!(retry_after(&refused) >= 1);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "over_capacity", "{body}");
    // A payment that does not verify is no payment: refused the same way.
    let forged = rig
        .app
        .post_json(CALL, &c, &[("payment-signature", "bm90IGEgcGF5bWVudA==")])
        .await;
    assert_eq!(forged.status(), 503);
    if let Some(python) = mcp::python() {
        let mut arguments = tool_arguments(&c);
        arguments["coach"] = json!("mary");
        let report = mcp::run(
            &python,
            &rig.app.url("/mcp"),
            "auto",
            vec![call("diagnose_growth", arguments, "none")],
        )
        .await;
        let error = assert_refused(&report["results"][0], "over_capacity");
        assert!(error["retry_after_s"].as_u64().is_some_and(|s| s >= 1));
    }
    assert_eq!(
        rig.facilitator.settle_calls(),
        2,
        "nothing settled for a refusal"
    );
    assert_eq!(
        gauge(&rig, "grove_over_capacity_total").await,
        Some(if mcp::python().is_some() { 3.0 } else { 2.0 })
    );

    // A payment that comes without a fresh quote is still admitted.
    let paid_d = rig.spawn_paid_call(CALL, &d, &pay_d);
    wait_until("the third payment is settled", async || {
        rig.facilitator.transfers() == 3
    })
    .await;
    rig.llm.release();
    for call in [paid_a, paid_b, paid_d] {
        let r = call.await.expect("join").expect("response");
        assert_eq!(r.status(), 200, "{:?}", r.text().await);
    }
    assert_eq!(rig.facilitator.transfers(), 3);
    assert_eq!(rig.llm.received(), 3, "one model call per settled call");
    // With the slots free again (once the api has read so, a second at most when distributed),
    // a new call is priced.
    wait_until("the api sees the slots free", async || {
        gauge(&rig, "grove_admission_ahead").await == Some(0.0)
    })
    .await;
    rig.challenge(CALL, &question(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_slots_refuse_new_calls_and_admit_payments_embedded() {
    full_slots_refuse_new_calls_and_admit_payments(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_slots_refuse_new_calls_and_admit_payments_distributed() {
    full_slots_refuse_new_calls_and_admit_payments(1).await;
}

#[derive(Default)]
struct Tally {
    refused: AtomicUsize,
    delivered: AtomicUsize,
    /// Any other answer to a paid request: a settled call that timed out would be here.
    paid_other: AtomicUsize,
}

/// One client: ask, and on `over_capacity` wait `Retry-After` and ask again; on a price, pay
/// and record what the paid request answered.
async fn client(rig: &PaidApp, n: usize, tally: &Tally) {
    let body = question(n);
    for _ in 0..60 {
        let r = rig.app.post_json(CALL, &body, &[]).await;
        match r.status().as_u16() {
            503 => {
                let wait = retry_after(&r);
                let answer: Value = r.json().await.expect("json");
                assert_eq!(answer["error"]["code"], "over_capacity", "{answer}");
                tally.refused.fetch_add(1, SeqCst);
                // What a client does with Retry-After (capped so the test stays short).
                tokio::time::sleep(Duration::from_secs(wait.min(2))).await;
            }
            402 => {
                let quote = r.headers()["payment-required"].to_str().expect("ascii");
                let payment = rig.wallet.pay(quote, PayOptions::default());
                let paid = rig.send_paid(CALL, &body, &payment, None).await;
                if paid.status() == 200 {
                    tally.delivered.fetch_add(1, SeqCst);
                } else {
                    tally.paid_other.fetch_add(1, SeqCst);
                    eprintln!("paid call {n}: {} {:?}", paid.status(), paid.text().await);
                }
                return;
            }
            other => panic!("unexpected {other} for an unpaid request"),
        }
    }
    panic!("client {n} was never admitted");
}

/// A flood of 24 clients on two slots, a model answering in one second and a 6 s deadline: the
/// calls that cannot finish in time are refused before any payment, and every call that was
/// settled was delivered (none settled and then timed out), each with one model call.
async fn a_flood_is_refused_before_payment_never_after(redis_workers: usize) {
    let rig = Arc::new(spawn_paid(options(redis_workers, 2, 6)).await);
    capacity_known(&rig, 2.0).await;
    rig.llm.script(std::iter::repeat_n(
        Reply::Slow(Duration::from_secs(1)),
        100,
    ));
    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = (0..24)
        .map(|n| {
            let (rig, tally) = (Arc::clone(&rig), Arc::clone(&tally));
            tokio::spawn(async move { client(&rig, n, &tally).await })
        })
        .collect();
    for c in clients {
        c.await.expect("client");
    }
    let (refused, delivered, other) = (
        tally.refused.load(SeqCst),
        tally.delivered.load(SeqCst),
        tally.paid_other.load(SeqCst),
    );
    eprintln!("refused {refused}, delivered {delivered}, paid and not delivered {other}");
    assert_eq!(other, 0, "no paid call failed or timed out");
    assert_eq!(delivered, 24);
    assert!(
        refused > 0,
        "a flood past capacity is refused before payment"
    );
    assert_eq!(rig.facilitator.transfers(), delivered, "settled once each");
    assert_eq!(
        rig.llm.received(),
        delivered,
        "one model call per settled call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_is_refused_before_payment_never_after_embedded() {
    a_flood_is_refused_before_payment_never_after(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_is_refused_before_payment_never_after_distributed() {
    a_flood_is_refused_before_payment_never_after(1).await;
}

/// On PostgreSQL, paid calls' claims that wait for the database (here a table locked by another
/// transaction) hold back new prices: once the oldest has waited a tenth of the deadline, an
/// unpaid request gets `503 over_capacity` with `Retry-After` and nothing is settled for it;
/// the paid calls already in go on once the database answers, each settled and run once, and
/// prices come back when the queue has drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_queued_for_the_database_refuse_new_prices_never_payments() {
    if !grove_tests::db::postgres_only() {
        return;
    }
    let rig = spawn_paid(options(0, 8, 10)).await;
    rig.llm.script(std::iter::repeat_n(Reply::Valid, 4));
    let bodies: Vec<Value> = (0..4).map(question).collect();
    let mut payments = Vec::new();
    for body in &bodies {
        let quote = rig.challenge(CALL, body).await;
        payments.push(rig.wallet.pay(&quote, PayOptions::default()));
    }
    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("connect");
    let locker = sea_orm::TransactionTrait::begin(&db).await.expect("begin");
    sea_orm::ConnectionTrait::execute_unprepared(
        &locker,
        r#"LOCK TABLE "idempotency_records" IN EXCLUSIVE MODE"#,
    )
    .await
    .expect("lock");
    // Two claims run (and wait on the lock), the others wait for a batch.
    let paid: Vec<_> = bodies
        .iter()
        .zip(&payments)
        .map(|(body, payment)| rig.spawn_paid_call(CALL, body, payment))
        .collect();
    // Read on /metrics: a request for a price would count as a call about to arrive.
    wait_until(
        "the oldest claim has waited a tenth of the deadline",
        async || {
            gauge(&rig, "grove_admission_write_wait_seconds")
                .await
                .is_some_and(|s| s >= 1.0)
        },
    )
    .await;
    let refused = rig.app.post_json(CALL, &question(9), &[]).await;
    assert_eq!(refused.status(), 503);
    assert!(retry_after(&refused) >= 1);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "over_capacity", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("waiting for the database"), "{body}");
    assert_eq!(rig.facilitator.settle_calls(), 0, "nothing settled yet");

    locker.rollback().await.expect("unlock");
    for call in paid {
        let r = call.await.expect("join").expect("response");
        assert_eq!(r.status(), 200, "{:?}", r.text().await);
    }
    assert_eq!(rig.facilitator.transfers(), 4, "the paid calls, once each");
    assert_eq!(rig.llm.received(), 4, "one model call per paid call");
    rig.challenge(CALL, &question(10)).await;
}
