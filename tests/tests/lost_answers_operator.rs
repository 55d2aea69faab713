//! A decision on an unknown payment whose write loses its answer (the third outcome, as
//! `lost_answers.rs` stages it for the paid call): the server carried it out, and the api could
//! not know.
//!
//! - An operator's decision, with its audit row in one transaction. It used to answer 503, and
//!   the operator's retry was refused (409, "the payment is settled, not waiting for an
//!   operator"): the decision stood without its answer, and the settled call waited for the
//!   recovery sweep to push its job. Now the decision is written again through the blip and
//!   finds its own audit row: the operator is answered, and the call runs at once.
//! - Reconciliation's proof that the money moved. Its write failed the pass, and the next pass
//!   found the payment no longer unknown: the settled call had no job until the recovery sweep
//!   pushed it a whole call deadline later, while its caller waited. Now it is written through
//!   the blip as a paid request's own outcome is, and a call found where that write leaves it
//!   gets its job at once.
//!
//! PostgreSQL only (`GROVE_TEST_DB=postgres`).

use grove_tests::{
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    pg_proxy::{Cut, PgProxy},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use serde_json::{Value, json};

const CALL: &str = "/api/v1/agents/mary/call";

/// Text only the settled outcome's statement has on PostgreSQL (`grove_common::ledger::pg::settled`).
const SETTLED_OUTCOME: &str = r#"(SELECT count(*) FROM c) AS "moved""#;

/// Text only an outcome's write onto its payment has (`grove_common::ledger::settlement`).
const PAYMENT_OUTCOME: &str = r#"UPDATE "payments" SET "updated_at" = $1, "status" = $2"#;

/// A paid-call rig on PostgreSQL, its database behind the proxy and its facilitator down (every
/// settlement's outcome unknown); None on SQLite.
async fn rig(options: Options) -> Option<(PaidApp, PgProxy)> {
    if !grove_tests::db::postgres_only() {
        return None;
    }
    let rig = spawn_paid(Options {
        db_proxy: true,
        extra_env: vec![("X402_FACILITATOR_TIMEOUT_S".into(), "1".into())],
        ..options
    })
    .await;
    let proxy = rig.db_proxy.clone().expect("the database behind a proxy");
    rig.facilitator.script(SettleScript::Down);
    Some((rig, proxy))
}

#[tokio::test]
async fn an_operators_decision_whose_commit_lost_its_answer_is_answered_and_acted_on_once() {
    let Some((rig, proxy)) = rig(Options {
        deadline_s: 2,
        // No BASE_RPC_URL: the operator's word decides.
        fake_chain: false,
        ..Default::default()
    })
    .await
    else {
        return;
    };
    let r = rig
        .pay_and_call(CALL, &caller_body("diagnose_growth"), Some("k1"))
        .await;
    let receipt = grove_tests::receipt_of_504(r, "the outcome is unknown").await;
    let admin = async |method: &str, path: &str, body: Option<Value>| {
        rig.app.admin(method, path, body).await
    };
    let (_, listed) = admin("GET", "/admin/v1/payments", None).await;
    let id = listed["payments"][0]["id"].as_str().expect("id").to_owned();

    proxy.cut_next(PAYMENT_OUTCOME, Cut::CommitLost);
    let transaction = format!("0x{}", "ab".repeat(32));
    let order = json!({"outcome": "settled", "transaction": transaction, "reason": "the facilitator's dashboard shows the transfer"});
    let path = format!("/admin/v1/payments/{id}/resolve");
    let (status, done) = admin("POST", &path, Some(order)).await;
    assert_eq!(proxy.cuts(), 1, "the decision's commit was cut");
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["payment"]["status"], "settled", "{done}");
    assert_eq!(
        done["payment"]["transaction"],
        transaction.as_str(),
        "{done}"
    );

    // The settled call runs, once.
    wait_until("the settled call's result", async || {
        rig.app.get_json(&receipt).await["status"] == "completed"
    })
    .await;
    assert_eq!(rig.llm.received(), 1, "one model call");
    let (_, audit) = admin("GET", "/admin/v1/audit", None).await;
    let entries = audit["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "one decision, recorded once: {audit}");
    assert_eq!(entries[0]["after"]["status"], "settled", "{audit}");
}

#[tokio::test]
async fn a_reconciled_settlement_whose_answer_was_lost_gets_its_job_at_once() {
    // The deadline is longer than the wait below: a job pushed by the recovery sweep (after a
    // whole deadline of quiet) comes too late for it.
    let Some((rig, proxy)) = rig(Options {
        deadline_s: 45,
        ..Default::default()
    })
    .await
    else {
        return;
    };
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(CALL, &body, PayOptions::default()).await;
    let nonce = decode_b64_json(&payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .expect("nonce")
        .to_owned();
    let call = rig.spawn_paid_call(CALL, &body, &payment);
    // The request's settle and reconciliation's first re-post, both unanswered.
    wait_until("reconciliation's first check", async || {
        rig.facilitator.requests_for_nonce(&nonce) >= 2
    })
    .await;

    proxy.cut_next(SETTLED_OUTCOME, Cut::AnswerLost);
    rig.facilitator.script(SettleScript::Success);
    wait_until("the reconciled call's model call", async || {
        rig.llm.received() == 1
    })
    .await;
    assert_eq!(proxy.cuts(), 1, "the settled outcome's answer was cut");
    let r = call.await.expect("the request's task").expect("an answer");
    assert_eq!(
        r.status(),
        200,
        "the caller gets its result within its deadline"
    );
    assert_eq!(rig.facilitator.transfers(), 1, "one transfer");
    assert_eq!(rig.llm.received(), 1, "one model call");
}
