//! A paid call's write to PostgreSQL whose answer does not come back: the write may or may not
//! have happened (the third outcome). A proxy in front of the database (`grove_tests::pg_proxy`)
//! cuts one statement, either after the server committed it (the answer lost) or before the
//! server saw it, and each case counts transfers, settlements, model calls and what is delivered.
//!
//! - The claim (before any money moves). A request that answered 503 here left a claim it did
//!   not know it had written: the identical retry then found the scope held by a call nobody
//!   would settle, and waited until reconciliation took the stale reservation minutes later.
//!   The claim is now written again with the same ids, and a scope found held by its own call is
//!   its own.
//! - The settled outcome (after the money moved). The request writes it again through the blip;
//!   a retry that finds the call already moved by its own lost write must still push its job,
//!   since nothing else will until the recovery sweep's deadline of quiet has passed (by then
//!   this request has answered 504).
//! - The run's start (its lease), its result and its failure, in the worker: a start found
//!   committed under the run's own lease is its own; a result found stored, or the call found
//!   failed with the run's own error, is announced to its waiters.
//!
//! PostgreSQL only (`GROVE_TEST_DB=postgres`): SQLite's writes run in the process, where no
//! answer travels over a connection to be lost.

use futures::StreamExt;
use grove_tests::{
    llm::{Reply, caller_body},
    paid::{Options, PaidApp, spawn_paid},
    pg_proxy::{Cut, PgProxy},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use grove_worker::coaching::MAX_MODEL_CALLS;
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

const PATH: &str = "/api/v1/agents/mary/call";

/// Text only the settled outcome's statement has (`grove_common::ledger::pg::settled`).
const SETTLED_OUTCOME: &str = r#"(SELECT count(*) FROM c) AS "moved""#;
/// Text only the claim's statement has (`grove_common::ledger::claim_pg`).
const CLAIM: &str = r#"AS "scope", (SELECT count(*) FROM p) AS "paid""#;
/// Text only the worker's writes of a run have: its start with the lease
/// (`grove_common::ledger::start_attempt`) and its result (`grove_common::ledger::pg::complete`).
const RUN_START: &str = r#""lease_process" = $6"#;
const RESULT: &str = r#"AS "finished", (SELECT count(*) FROM r) AS "stored""#;
/// Text only the worker's write of a run's failure has (`grove_common::ledger::fail`).
const FAILURE: &str = r#""status" = $1, "error" = $2, "updated_at" = $3"#;

/// A paid-call rig on PostgreSQL, its database behind the proxy; None on SQLite. The deadline is
/// short: a request that left its call to the recovery sweep (which pushes a lost job only after
/// a whole deadline of quiet) or to a lapsing lease answers 504 first.
async fn rig() -> Option<(PaidApp, PgProxy)> {
    if !grove_tests::db::postgres_only() {
        return None;
    }
    let rig = spawn_paid(Options {
        deadline_s: 8,
        redis_workers: 1,
        db_proxy: true,
        ..Default::default()
    })
    .await;
    let proxy = rig.db_proxy.clone().expect("the database behind a proxy");
    Some((rig, proxy))
}

/// The `n`th paid call of a rig (`key`), with the next execution of the statement containing
/// `needle` cut as `cut`: its payment and its answer, once the cut is seen to have happened.
async fn paid_call_cut(
    (rig, proxy): &(PaidApp, PgProxy),
    n: usize,
    (needle, cut): (&str, Cut),
    key: &str,
) -> (String, reqwest::Response) {
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    proxy.cut_next(needle, cut);
    let r = rig.send_paid(PATH, &body, &payment, Some(key)).await;
    assert_eq!(
        proxy.cuts(),
        n + 1,
        "{needle} {cut:?}: the statement was cut"
    );
    (payment, r)
}

/// After the `n`th call: one transfer and one model call each, no more.
fn once_each(rig: &PaidApp, n: usize, case: &str) {
    assert_eq!(rig.facilitator.transfers(), n + 1, "{case}: one transfer");
    assert_eq!(rig.llm.received(), n + 1, "{case}: one model call");
}

#[tokio::test]
async fn a_settled_outcome_cut_before_or_after_its_commit_is_delivered_once_by_its_request() {
    let Some(cutting) = rig().await else {
        return;
    };
    let rig = &cutting.0;
    for (n, cut) in [Cut::AnswerLost, Cut::Unsent].into_iter().enumerate() {
        let key = format!("cut-{n}");
        let (payment, r) = paid_call_cut(&cutting, n, (SETTLED_OUTCOME, cut), &key).await;
        assert_eq!(r.status(), 200, "{cut:?}: delivered by its own request");
        let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
        assert_eq!(settle["success"], true, "{cut:?}");
        let envelope: serde_json::Value = r.json().await.expect("json");
        once_each(rig, n, &format!("{cut:?}"));
        let nonce = decode_b64_json(&payment)["payload"]["authorization"]["nonce"]
            .as_str()
            .expect("nonce")
            .to_owned();
        let settles = rig.facilitator.requests_for_nonce(&nonce);
        assert_eq!(settles, 1, "{cut:?}: settled once");
        let receipt_url = envelope["receipt"]["url"].as_str().expect("receipt url");
        let receipt = rig.app.get_json(receipt_url).await;
        assert_eq!(receipt["status"], "completed", "{cut:?}");
        assert_eq!(receipt["settlement"], "settled", "{cut:?}");
        assert_eq!(receipt["result"], envelope, "{cut:?}");
    }
}

#[tokio::test]
async fn a_claim_cut_before_or_after_its_commit_is_settled_once_by_its_request() {
    let Some(cutting) = rig().await else {
        return;
    };
    let rig = &cutting.0;
    for (n, cut) in [Cut::AnswerLost, Cut::Unsent].into_iter().enumerate() {
        let key = format!("claim-cut-{n}");
        let (payment, r) = paid_call_cut(&cutting, n, (CLAIM, cut), &key).await;
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert_eq!(status, 200, "{cut:?}: {text}");
        once_each(rig, n, &format!("{cut:?}"));
        // The identical retry replays: nothing is charged or run again.
        let body = caller_body("diagnose_growth");
        let again = rig.send_paid(PATH, &body, &payment, Some(&key)).await;
        assert_eq!(again.status(), 200, "{cut:?}");
        assert_eq!(again.headers()["idempotent-replay"], "true", "{cut:?}");
        once_each(rig, n, &format!("{cut:?}, replayed"));
    }
}

#[tokio::test]
async fn a_run_whose_start_or_result_is_cut_before_or_after_its_commit_is_delivered_once() {
    let Some(cutting) = rig().await else {
        return;
    };
    let rig = &cutting.0;
    let (carried, _) = announced(rig).await;
    let cases = [
        (RUN_START, Cut::AnswerLost),
        (RUN_START, Cut::Unsent),
        (RESULT, Cut::AnswerLost),
        (RESULT, Cut::Unsent),
    ];
    for (n, (needle, cut)) in cases.into_iter().enumerate() {
        let key = format!("run-cut-{n}");
        let (_, r) = paid_call_cut(&cutting, n, (needle, cut), &key).await;
        assert_eq!(r.status(), 200, "{needle} {cut:?}");
        once_each(rig, n, &format!("{needle} {cut:?}"));
        // The run announced its result. One that took its own lost write of the result for a
        // lease lost announced nothing, and its waiter found the result only by polling.
        let carried = carried.clone();
        wait_until("the run to announce its result", async || {
            carried.load(Ordering::SeqCst) == n + 1
        })
        .await;
    }
}

/// How many completions the workers announced on the rig's namespace: those carrying a result,
/// and bare notices (a failure's).
async fn announced(rig: &PaidApp) -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let namespace = rig.env["QUEUE_NAMESPACE"].clone();
    let client = redis::Client::open(grove_tests::paid::REDIS_URL).expect("redis");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    pubsub
        .subscribe(grove_common::jobs::done_channel(&namespace))
        .await
        .expect("subscribe");
    let (carried, bare) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counts = (carried.clone(), bare.clone());
    tokio::spawn(async move {
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            match grove_common::completion::parse_message(message.get_payload_bytes()) {
                Some((_, result)) if !result.is_empty() => counts.0.fetch_add(1, Ordering::SeqCst),
                Some(_) => counts.1.fetch_add(1, Ordering::SeqCst),
                None => 0,
            };
        }
    });
    (carried, bare)
}

#[tokio::test]
async fn a_run_whose_failure_is_cut_before_or_after_its_commit_is_announced() {
    let Some(cutting) = rig().await else {
        return;
    };
    let rig = &cutting.0;
    let (_, bare) = announced(rig).await;
    for (n, cut) in [Cut::AnswerLost, Cut::Unsent].into_iter().enumerate() {
        // Every answer unreadable: the run fails once its re-asks are spent.
        rig.llm
            .script(std::iter::repeat_n(Reply::NotJson, MAX_MODEL_CALLS));
        let key = format!("failure-cut-{n}");
        let (_, r) = paid_call_cut(&cutting, n, (FAILURE, cut), &key).await;
        assert_eq!(r.status(), 502, "{cut:?}");
        let answer: serde_json::Value = r.json().await.expect("json");
        assert_eq!(answer["error"]["code"], "upstream_failed", "{cut:?}");
        // The run told its waiters. One that took its own lost write for a lease lost told
        // nobody, and the failure was found only by polling.
        let bare = bare.clone();
        wait_until("the run to announce its failure", async || {
            bare.load(Ordering::SeqCst) > n
        })
        .await;
        assert_eq!(rig.llm.received(), (n + 1) * MAX_MODEL_CALLS, "{cut:?}");
    }
}
