//! What happens when the facilitator or the model misbehaves: nothing is enqueued after a
//! refused settlement (unknown outcomes: `settlement_faults.rs`), a failure after settlement is retried free, invalid answers are re-asked,
//! and provider errors are classified (CONTRACT 3, 5, 7; issue 3 items 5 and 6).

use grove_tests::{
    facilitator::SettleScript,
    llm::{FakeLlm, Reply, caller_body, model_answer},
    paid::{Options, spawn_paid},
    x402::{PayOptions, decode_b64_json},
};
use serde_json::{Value, json};
use std::time::Duration;

const PATH: &str = "/api/v1/agents/mary/call";

async fn error_of(r: reqwest::Response) -> Value {
    r.json::<Value>().await.expect("json")
}

#[tokio::test]
async fn settlement_refusals_answer_402_with_the_reason_and_enqueue_nothing() {
    let rig = spawn_paid(Options::default()).await;
    let body = caller_body("diagnose_growth");
    // The terms of the unpaid 402: a refusal after settlement must offer the same ones (they are
    // built again for it, not kept through the call).
    let offered = decode_b64_json(&rig.challenge(PATH, &body).await);
    for terms in ["accepts", "resource"] {
        assert!(!offered[terms].is_null(), "the first 402 offers {terms}");
    }
    for (script, reason) in [
        (
            SettleScript::RefuseWith200("insufficient_funds"),
            "settlement_failed:insufficient_funds",
        ),
        (
            SettleScript::RefuseWith400("invalid_exact_evm_payload_signature"),
            "settlement_failed:invalid_exact_evm_payload_signature",
        ),
    ] {
        rig.facilitator.script(script);
        let r = rig.pay_and_call(PATH, &body, None).await;
        assert_eq!(r.status(), 402);
        let again = decode_b64_json(
            r.headers()["payment-required"]
                .to_str()
                .expect("an ascii payment-required header"),
        );
        for terms in ["accepts", "resource", "extensions"] {
            assert_eq!(
                again[terms], offered[terms],
                "the 402 after a refused settlement offers other {terms} than the first"
            );
        }
        assert_eq!(again["error"], reason);
        assert_eq!(error_of(r).await["error"], reason);
    }
    assert_eq!(rig.llm.received(), 0, "nothing was enqueued");
    // The refused request bought nothing; a retry with a working payment goes through.
    rig.facilitator.script(SettleScript::Success);
    assert_eq!(rig.pay_and_call(PATH, &body, None).await.status(), 200);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn an_invalid_answer_is_re_asked_with_its_errors_and_usage_sums_every_attempt() {
    let rig = spawn_paid(Options::default()).await;
    let mut wrong = model_answer("diagnose_growth");
    wrong["deliverable"]["ranked_levers"][0]["lever"] =
        json!("Something other than thinking.lever");
    wrong["surplus"] = json!("dropped by assembly");
    rig.llm
        .script([Reply::Answer(wrong), Reply::NotJson, Reply::Valid]);
    let r = rig
        .pay_and_call(PATH, &caller_body("diagnose_growth"), None)
        .await;
    assert_eq!(r.status(), 200);
    let envelope: Value = r.json().await.expect("json");
    let (i, o) = FakeLlm::usage_per_call();
    assert_eq!(
        envelope["usage"],
        json!({"input_tokens": 3 * i, "output_tokens": 3 * o})
    );
    let bodies = rig.llm.bodies();
    assert_eq!(bodies.len(), 3);
    let reask = bodies[1]["messages"].to_string();
    assert!(
        reask.contains("ranked_levers/0/lever"),
        "the re-ask names the failed rule: {reask}"
    );
}

#[tokio::test]
async fn three_invalid_answers_are_502_with_a_receipt_and_the_retry_is_free() {
    let rig = spawn_paid(Options::default()).await;
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
    let err = error_of(r).await;
    assert_eq!(err["error"]["code"], "upstream_failed");
    let receipt_url = err["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();
    assert_eq!(rig.app.get_json(&receipt_url).await["status"], "failed");
    assert_eq!(rig.llm.received(), 3);

    // The identical retry runs the work again without a new settlement.
    let retry = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.llm.received(), 4);
    assert_eq!(rig.app.get_json(&receipt_url).await["status"], "completed");
}

#[tokio::test]
async fn a_refusal_fails_at_once_and_a_cut_off_answer_gets_one_larger_retry() {
    let rig = spawn_paid(Options::default()).await;
    for (script, mode, calls) in [
        (vec![Reply::Refusal], "diagnose_growth", 1),
        (
            vec![Reply::Truncated, Reply::Truncated],
            "audit_function",
            2,
        ),
    ] {
        rig.llm.script(script);
        let before = rig.llm.received();
        let r = rig.pay_and_call(PATH, &caller_body(mode), None).await;
        assert_eq!(r.status(), 502, "{mode}");
        assert_eq!(rig.llm.received(), before + calls, "{mode}: no re-ask");
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let rig = spawn_paid(Options::default()).await;
    rig.llm.script([
        Reply::RateLimited { retry_after_s: 1 },
        Reply::ServerError,
        Reply::Valid,
    ]);
    let started = std::time::Instant::now();
    let r = rig
        .pay_and_call(PATH, &caller_body("diagnose_growth"), None)
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited for retry-after"
    );
    assert_eq!(rig.llm.received(), 3);
    let envelope: Value = r.json().await.expect("json");
    let (i, _) = FakeLlm::usage_per_call();
    assert_eq!(
        envelope["usage"]["input_tokens"], i,
        "failed HTTP attempts bill nothing"
    );
}

#[tokio::test]
async fn the_anthropic_wire_format_works_end_to_end() {
    let rig = spawn_paid(Options {
        provider: "anthropic",
        ..Default::default()
    })
    .await;
    rig.llm.script([Reply::ServerError, Reply::Valid]);
    let r = rig
        .pay_and_call(
            "/api/v1/agents/oak/call",
            &caller_body("plan_capacity"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let envelope: Value = r.json().await.expect("json");
    assert_eq!(envelope["agent"], "oak");
    let asked = &rig.llm.bodies()[1];
    assert_eq!(asked["output_config"]["format"]["type"], "json_schema");
}

#[tokio::test]
async fn past_the_deadline_the_call_answers_504_with_a_receipt_and_finishes_later() {
    // The engine never runs past CALL_DEADLINE_S itself, so what outlives the API's wait is a
    // call that started late: here its settlement took longer than the whole deadline. The model
    // holds its answer until the 504 is seen, so the job cannot finish before the API answers.
    let rig = spawn_paid(Options {
        deadline_s: 2,
        ..Default::default()
    })
    .await;
    rig.facilitator
        .script(SettleScript::Slow(Duration::from_millis(2500)));
    rig.llm.script([Reply::Held]);
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let first = rig.spawn_paid_call(PATH, &body, &payment);

    // A duplicate while the payment is still settling waits out its own deadline, then 504
    // with Retry-After (a running call's duplicate gets 409 `request_in_progress` instead).
    grove_tests::wait_until("the settlement to start", async || {
        rig.facilitator.settle_calls() == 1
    })
    .await;
    let dup = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(dup.status(), 504);
    assert!(dup.headers().get("retry-after").is_some());
    assert_eq!(error_of(dup).await["error"]["code"], "settlement_pending");

    let r = first.await.expect("task").expect("response");
    assert_eq!(r.status(), 504);
    assert!(
        r.headers().get("retry-after").is_some(),
        "504 carries Retry-After as documented"
    );
    let err = error_of(r).await;
    assert_eq!(err["error"]["code"], "still_running");
    rig.llm.release();
    let receipt_url = err["error"]["receipt"]["url"]
        .as_str()
        .expect("receipt")
        .to_owned();

    // Poll the receipt until the work finishes (a condition, bounded), then the retry replays.
    grove_tests::wait_until("the call to complete", async || {
        rig.app.get_json(&receipt_url).await["status"] == "completed"
    })
    .await;
    let replay = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replay"], "true");
    assert_eq!(rig.facilitator.settle_calls(), 1);
    assert_eq!(rig.llm.received(), 1);
}

#[tokio::test]
async fn a_model_slower_than_the_deadline_fails_within_it_and_the_retry_is_free() {
    let rig = spawn_paid(Options {
        deadline_s: 2,
        ..Default::default()
    })
    .await;
    rig.llm.script([Reply::Slow(Duration::from_secs(4))]);
    let body = caller_body("diagnose_growth");
    let payment = rig.payment_for(PATH, &body, PayOptions::default()).await;
    let started = std::time::Instant::now();

    let r = rig.send_paid(PATH, &body, &payment, None).await;

    assert_eq!(
        r.status(),
        502,
        "failed within the deadline, not 504 and 4 s later"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let retry = rig.send_paid(PATH, &body, &payment, None).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(rig.facilitator.settle_calls(), 1);
}
