//! Retries around a settlement (issue 7): an idempotency scope outlives its window while its
//! call's money is unknown or its paid work undelivered; the identical retry while the outcome is
//! unknown waits without being charged; only a settled payment is re-run for free; and a
//! facilitator that refuses our credentials is the operator's fault (503, the same payment good
//! again once fixed), not the payer's. Each test counts transfers, model calls and results.

use chrono::TimeDelta;
use grove_common::db::entities::payment;
use grove_common::ledger::PaymentStatus;
use grove_tests::{
    db,
    facilitator::SettleScript,
    llm::{Reply, caller_body},
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";

async fn rig(deadline_s: u64, extra_env: &[(&str, &str)]) -> PaidApp {
    let mut env = vec![("X402_FACILITATOR_TIMEOUT_S".to_owned(), "1".to_owned())];
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    spawn_paid(Options {
        deadline_s,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: env,
        ..Default::default()
    })
    .await
}

fn nonce_of(payment: &str) -> String {
    decode_b64_json(payment)["payload"]["authorization"]["nonce"]
        .as_str()
        .expect("nonce")
        .to_owned()
}

async fn error_of(r: reqwest::Response) -> Value {
    r.json::<Value>().await.expect("json body")["error"].clone()
}

#[tokio::test]
async fn a_keyless_scope_is_not_taken_over_while_its_settlement_is_unknown() {
    let rig = rig(2, &[]).await;
    let body = caller_body("diagnose_growth");
    let first = rig.payment_for(PATH, &body, PayOptions::default()).await;
    // The facilitator hangs, then is down: the outcome stays unknown.
    rig.facilitator
        .script_next(SettleScript::Hang(Duration::from_secs(3)));
    rig.facilitator.script(SettleScript::Down);
    let r = rig.send_paid(PATH, &body, &first, None).await;
    assert_eq!(r.status(), 504);
    let error = error_of(r).await;
    assert_eq!(error["code"], "settlement_pending");
    let receipt_url = error["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Past the keyless coaching window (10 minutes) on the service clock, the same body with a
    // new authorization is still the same request: never a second charge.
    rig.clock.advance(TimeDelta::minutes(11));
    let second = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &second, None).await;
    assert_eq!(r.status(), 504);
    assert_eq!(error_of(r).await["code"], "settlement_pending");
    assert_eq!(
        rig.facilitator.requests_for_nonce(&nonce_of(&second)),
        0,
        "the second authorization is never offered for settlement"
    );

    rig.facilitator.script(SettleScript::Success);
    wait_until("the original settles and completes", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_of(&second)), 0);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_keyless_scope_is_not_taken_over_while_its_paid_work_is_undelivered() {
    // A model slower than the call's deadline: the paid call fails inside it (502, free retry).
    let rig = rig(1, &[]).await;
    rig.llm.script([Reply::Slow(Duration::from_secs(4))]);
    let body = caller_body("diagnose_growth");
    let first = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &first, None).await;
    assert_eq!(r.status(), 502);
    let error = error_of(r).await;
    assert_eq!(error["code"], "upstream_failed");
    let receipt_url = error["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Past the keyless window the same body with a new authorization is still that paid request:
    // its failed work runs again for free, and the new authorization is never settled.
    rig.clock.advance(TimeDelta::minutes(11));
    let second = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &second, None).await;
    assert_eq!(r.status(), 200, "the free re-run delivers");
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_of(&second)), 0);
    assert_eq!(rig.app.get_json(&receipt_url).await["status"], "completed");
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 2, "the slow answer, then the re-run's");
}

#[tokio::test]
async fn the_identical_retry_while_the_outcome_is_unknown_waits_uncharged_then_gets_the_result() {
    let rig = rig(2, &[]).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    // The transfer lands, the facilitator says pending, then is down; the chain endpoint lags
    // too far behind to tell.
    rig.facilitator.lag_rpc(3_600);
    rig.facilitator.script_next(SettleScript::Pending);
    rig.facilitator.script(SettleScript::Down);
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 504);
    let receipt_url = error_of(r).await["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    let retry = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(retry.status(), 504, "not a 402: the money may have moved");
    assert!(retry.headers().get("payment-required").is_none());
    assert!(retry.headers().get("retry-after").is_some());
    let error = error_of(retry).await;
    assert_eq!(error["code"], "settlement_pending");
    assert_eq!(error["receipt"]["url"], receipt_url.as_str());
    assert_eq!(
        rig.llm.received(),
        0,
        "nothing runs while the money is unknown"
    );

    rig.facilitator.script(SettleScript::Success);
    rig.facilitator.lag_rpc(0);
    wait_until("reconciliation settles and the work runs", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    let retry = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(retry.headers()["idempotent-replay"], "true");
    let settle = decode_b64_json(retry.headers()["payment-response"].to_str().expect("ascii"));
    let tx = rig.facilitator.transaction_of(&nonce_of(&payment));
    assert!(tx.is_some());
    assert_eq!(settle["transaction"].as_str(), tx.as_deref());
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_failed_call_is_re_run_for_free_only_when_its_payment_settled() {
    let rig = rig(20, &[]).await;
    let bad = json!({"reply": "too thin"});
    rig.llm.script([
        Reply::Answer(bad.clone()),
        Reply::Answer(bad.clone()),
        Reply::Answer(bad),
    ]);
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(r.status(), 502);
    let receipt_url = error_of(r).await["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();
    assert_eq!(rig.llm.received(), 3);

    let db = grove_common::db::connect_url(&rig.db.url)
        .await
        .expect("database");
    let set_payment = async |status: PaymentStatus| {
        payment::Entity::update_many()
            .set(payment::ActiveModel {
                status: Set(status),
                ..Default::default()
            })
            .filter(payment::Column::Nonce.eq(nonce_of(&payment).to_ascii_lowercase()))
            .exec(&db)
            .await
            .expect("update the payment")
            .rows_affected
    };
    // Whatever left the call failed, a payment that is not settled buys no free re-run.
    for unsettled in [
        PaymentStatus::Unknown,
        PaymentStatus::Refused,
        PaymentStatus::Reserved,
    ] {
        assert_eq!(set_payment(unsettled).await, 1);
        let retry = rig.send_paid(PATH, &body, &payment, None).await;
        assert_ne!(retry.status(), 200, "{unsettled}");
        assert_eq!(rig.llm.received(), 3, "{unsettled}: no model call");
        assert_eq!(
            rig.app.get_json(&receipt_url).await["status"],
            "failed",
            "{unsettled}"
        );
    }
    // Settled: the identical retry runs again, free.
    assert_eq!(set_payment(PaymentStatus::Settled).await, 1);
    let retry = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(rig.llm.received(), 4);
    assert_eq!(rig.facilitator.settle_calls(), 1, "settled once");
}

#[tokio::test]
async fn refused_facilitator_credentials_are_a_503_and_the_same_payment_works_once_fixed() {
    let rig = rig(20, &[("X402_FACILITATOR_AUTH", "Bearer operator-token")]).await;
    // The facilitator now wants another token: ours is refused (401).
    rig.facilitator.expect_auth("Bearer rotated-token");
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    for attempt in ["first", "identical retry while still broken"] {
        let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
        assert_eq!(r.status(), 503, "{attempt}: the payer did nothing wrong");
        assert!(r.headers().get("payment-required").is_none(), "{attempt}");
        assert!(r.headers().get("retry-after").is_some(), "{attempt}");
        assert_eq!(error_of(r).await["code"], "settlement_unavailable");
    }
    assert_eq!(rig.facilitator.settle_calls(), 2, "each attempt reached it");
    assert_eq!(rig.facilitator.transfers(), 0);
    assert_eq!(rig.llm.received(), 0);

    // The operator fixes the credentials: the very same payment now buys the call.
    rig.facilitator.expect_auth("Bearer operator-token");
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200);
    let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
    assert_eq!(
        settle["transaction"].as_str(),
        rig.facilitator
            .transaction_of(&nonce_of(&payment))
            .as_deref()
    );
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
    // And it stays bought once: the identical retry replays.
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["idempotent-replay"], "true");
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
}
