//! A settled payment's outcome, written to PostgreSQL, whose answer does not come back: the
//! money has moved and the write may or may not have happened. A proxy in front of the database
//! (`grove_tests::pg_proxy`) cuts the one statement that records the outcome, either after the
//! server committed it (the answer lost) or before the server saw it. Either way the request
//! writes again through the blip, and the call is delivered by this request, within its deadline:
//! a retry that finds the call already moved by its own lost write must still push its job,
//! since nothing else will until the recovery sweep's deadline of quiet has passed (by then this
//! request has answered 504). Each case counts transfers, settlements of its authorization,
//! model calls and the stored payment.
//!
//! PostgreSQL only (`GROVE_TEST_DB=postgres`): SQLite's writes run in the process, where no
//! answer travels over a connection to be lost.

use grove_tests::{
    llm::caller_body,
    paid::{Options, spawn_paid},
    pg_proxy::Cut,
    x402::{PayOptions, decode_b64_json},
};

const PATH: &str = "/api/v1/agents/mary/call";

/// Text only the settled outcome's statement has (`grove_common::ledger::pg::settled`).
const SETTLED_OUTCOME: &str = r#"(SELECT count(*) FROM c) AS "moved""#;

#[tokio::test]
async fn a_settled_outcome_cut_before_or_after_its_commit_is_delivered_once_by_its_request() {
    if grove_tests::db::backend() != "postgres" {
        eprintln!("PostgreSQL only: GROVE_TEST_DB=postgres");
        return;
    }
    // The recovery sweep would push a lost job only after a whole deadline of quiet: a request
    // that left its job to it would answer 504 first.
    let rig = spawn_paid(Options {
        deadline_s: 8,
        redis_workers: 1,
        db_proxy: true,
        ..Default::default()
    })
    .await;
    let proxy = rig.db_proxy.clone().expect("the database behind a proxy");
    for (n, cut) in [Cut::AnswerLost, Cut::Unsent].into_iter().enumerate() {
        let body = caller_body("diagnose_growth");
        let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
        let nonce = decode_b64_json(&payment)["payload"]["authorization"]["nonce"]
            .as_str()
            .expect("nonce")
            .to_owned();
        proxy.cut_next(SETTLED_OUTCOME, cut);
        let r = rig
            .send_paid(PATH, &body, &payment, Some(&format!("cut-{n}")))
            .await;
        assert_eq!(
            proxy.cuts(),
            n + 1,
            "{cut:?}: the outcome's statement was cut"
        );
        assert_eq!(r.status(), 200, "{cut:?}: delivered by its own request");
        let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
        assert_eq!(settle["success"], true, "{cut:?}");
        let envelope: serde_json::Value = r.json().await.expect("json");
        assert_eq!(rig.facilitator.transfers(), n + 1, "{cut:?}: one transfer");
        assert_eq!(
            rig.facilitator.requests_for_nonce(&nonce),
            1,
            "{cut:?}: settled once"
        );
        assert_eq!(rig.llm.received(), n + 1, "{cut:?}: one model call");
        let receipt_url = envelope["receipt"]["url"].as_str().expect("receipt url");
        let receipt = rig.app.get_json(receipt_url).await;
        assert_eq!(receipt["status"], "completed", "{cut:?}");
        assert_eq!(receipt["settlement"], "settled", "{cut:?}");
        assert_eq!(receipt["result"], envelope, "{cut:?}");
    }
}
