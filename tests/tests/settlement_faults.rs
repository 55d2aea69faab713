//! Settlement you can trust (issue 7): a facilitator that settles and then answers late, with a
//! 5xx or `settlement_pending`, or hangs, leaves the outcome unknown. Unknown is never a 402 and
//! never releases the scope: the server reconciles it (re-posting the identical payload) and the
//! work runs once. A refused settlement is `unpaid`: no work, no free re-run, the same 402 for
//! every repeat. Each test counts transfers on the fake chain, model calls and delivered results.
//! On PostgreSQL the suite also runs the jobs through Redis.

use grove_tests::{
    db,
    facilitator::SettleScript,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
    x402::{PayOptions, decode_b64_json},
};
use serde_json::Value;
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";

/// A short facilitator timeout, so that a late answer is a timeout; Redis on PostgreSQL runs.
async fn rig(deadline_s: u64) -> PaidApp {
    rig_with(deadline_s, 1).await
}

async fn rig_with(deadline_s: u64, facilitator_timeout_s: u64) -> PaidApp {
    spawn_paid(Options {
        deadline_s,
        redis_workers: usize::from(db::backend() == "postgres"),
        extra_env: vec![(
            "X402_FACILITATOR_TIMEOUT_S".into(),
            facilitator_timeout_s.to_string(),
        )],
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

async fn json_of(r: reqwest::Response) -> Value {
    r.json().await.expect("json body")
}

async fn receipt_of(rig: &PaidApp, url: &str) -> Value {
    rig.app.get_json(url).await
}

#[tokio::test]
async fn a_facilitator_that_settles_then_answers_late_or_with_an_error_delivers_once() {
    let rig = rig(20).await;
    // The rig reads the fake's chain (`BASE_RPC_URL`), as production must: reconciliation finds
    // each transfer there and names its transaction, without settling again.
    let faults = [
        ("late answer", SettleScript::Slow(Duration::from_secs(3))),
        ("500 after settling", SettleScript::SettleThenStatus(500)),
        ("502 after settling", SettleScript::SettleThenStatus(502)),
        ("settlement_pending", SettleScript::Pending),
        ("success without a payer", SettleScript::SettleWithoutPayer),
    ];
    for (n, (fault, script)) in faults.into_iter().enumerate() {
        let body = caller_body("diagnose_growth");
        let key = format!("fault-{n}");
        let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
        rig.facilitator.script_next(script);
        let r = rig.send_paid(PATH, &body, &payment, Some(&key)).await;
        assert_eq!(r.status(), 200, "{fault}: the call is delivered, not a 402");
        let settle = decode_b64_json(r.headers()["payment-response"].to_str().expect("ascii"));
        assert_eq!(settle["success"], true, "{fault}");
        assert_eq!(settle["network"], "eip155:8453", "{fault}");
        assert_eq!(
            settle["payer"],
            format!("{:#x}", rig.wallet.address()),
            "{fault}"
        );
        let tx = rig.facilitator.transaction_of(&nonce_of(&payment));
        assert_eq!(settle["transaction"].as_str(), tx.as_deref(), "{fault}");
        assert_eq!(
            rig.facilitator.transfers(),
            n + 1,
            "{fault}: exactly one transfer"
        );
        assert_eq!(rig.llm.received(), n + 1, "{fault}: exactly one model call");
        assert_eq!(
            rig.facilitator.requests_for_nonce(&nonce_of(&payment)),
            1,
            "{fault}: reconciled from the chain, not by settling again"
        );
        // The identical retry replays; nothing moves again.
        let again = rig.send_paid(PATH, &body, &payment, Some(&key)).await;
        assert_eq!(again.status(), 200, "{fault}");
        assert_eq!(again.headers()["idempotent-replay"], "true");
        assert_eq!(rig.facilitator.transfers(), n + 1, "{fault}");
        assert_eq!(rig.llm.received(), n + 1, "{fault}");
    }
}

#[tokio::test]
async fn an_unknown_outcome_is_never_a_402_and_the_server_finishes_it_without_the_client() {
    let rig = rig(2).await;
    let body = caller_body("diagnose_growth");
    let key = "unknown-then-settled";
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    // The facilitator hangs, then is down: nothing moves and nothing is known.
    rig.facilitator
        .script_next(SettleScript::Hang(Duration::from_secs(5)));
    rig.facilitator.script(SettleScript::Down);
    let r = rig.send_paid(PATH, &body, &payment, Some(key)).await;
    assert_eq!(r.status(), 504, "unknown is not a 402");
    assert!(r.headers().get("payment-required").is_none());
    assert!(r.headers().get("retry-after").is_some());
    let error = json_of(r).await["error"].clone();
    assert_eq!(error["code"], "settlement_pending");
    let receipt_url = error["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();
    let receipt = receipt_of(&rig, &receipt_url).await;
    assert_eq!(receipt["status"], "pending");
    assert_eq!(receipt["settlement"], "unknown");

    // A new authorization for the same (payer, key, body) is never settled: it waits on the
    // original's outcome.
    let second = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let r = rig.send_paid(PATH, &body, &second, Some(key)).await;
    assert_eq!(r.status(), 504);
    assert_eq!(json_of(r).await["error"]["code"], "settlement_pending");
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_of(&second)), 0);
    assert_eq!(rig.facilitator.transfers(), 0);
    assert_eq!(
        rig.llm.received(),
        0,
        "nothing runs while the money is unknown"
    );

    // The facilitator recovers; the sweep settles the original and the work runs, with no
    // client waiting.
    rig.facilitator.script(SettleScript::Success);
    wait_until("the receipt completes", async || {
        receipt_of(&rig, &receipt_url).await["status"] == "completed"
    })
    .await;
    let receipt = receipt_of(&rig, &receipt_url).await;
    assert_eq!(receipt["settlement"], "settled");
    assert!(receipt["result"].is_object());
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);

    // Both authorizations' retries replay the one result; the second never moves money.
    for payment in [&payment, &second] {
        let r = rig.send_paid(PATH, &body, payment, Some(key)).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["idempotent-replay"], "true");
    }
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_of(&second)), 0);
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_refusal_racing_ninety_repeats_gives_every_one_the_same_402_and_no_work() {
    // The refusal must arrive as an answer (not a timeout) while 90 repeats load the server.
    // Repeats that find the scope held and then read it released by the refusal claim again
    // (`Claim::Vacated`) and get the refusal; under CPU load, most of the 90 do.
    let rig = rig_with(20, 10).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    // Slow enough that repeats arrive while the settlement is open.
    rig.facilitator.script(SettleScript::RefuseAfter(
        Duration::from_millis(500),
        "insufficient_funds",
    ));
    let calls: Vec<_> = (0..91)
        .map(|_| rig.spawn_paid_call(PATH, &body, &payment))
        .collect();
    for call in calls {
        let r = call.await.expect("task").expect("response");
        let status = r.status();
        let paid_challenge = r.headers().get("payment-required").is_some();
        let answer = json_of(r).await;
        assert_eq!(status, 402, "{answer}");
        assert!(paid_challenge);
        assert_eq!(answer["error"], "settlement_failed:insufficient_funds");
    }
    assert_eq!(rig.facilitator.transfers(), 0);
    assert_eq!(rig.llm.received(), 0, "no free work for a refused payment");
    assert_eq!(
        rig.facilitator.requests_for_nonce(&nonce_of(&payment)),
        1,
        "the authorization was offered for settlement once"
    );

    // The refusal bought nothing and released the scope: a new payment buys it.
    rig.facilitator.script(SettleScript::Success);
    let r = rig.pay_and_call(PATH, &body, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn an_unpaid_call_is_never_re_run_for_free() {
    let rig = rig(20).await;
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    rig.facilitator.script_next(SettleScript::RefuseWith400(
        "invalid_exact_evm_payload_signature",
    ));
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 402);
    // The same authorization again: the same 402, not a free run and not a second settlement.
    let r = rig.send_paid(PATH, &body, &payment, Some("k")).await;
    assert_eq!(r.status(), 402);
    assert_eq!(
        json_of(r).await["error"],
        "settlement_failed:invalid_exact_evm_payload_signature"
    );
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_of(&payment)), 1);
    assert_eq!(rig.llm.received(), 0);
    assert_eq!(rig.facilitator.transfers(), 0);
}
