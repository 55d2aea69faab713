//! Paying for MCP tools (issue 13) with x402 over MCP: PyPI `x402` signs real EIP-3009
//! authorizations from the requirements an unpaid call returns, and PyPI `mcp` sends them in
//! `_meta["x402/payment"]`. The loopback facilitator counts settlements and the loopback model
//! counts calls, so replays, forgeries and refusals are seen to charge and run nothing.

use grove_common::catalog;
use grove_tests::{
    action_body,
    facilitator::SettleScript,
    llm::caller_body,
    mcp::{
        self, assert_answer_matches, assert_payment_required, assert_refused, call, nonce_sent,
        rig, rig_with, tool_arguments,
    },
    paid::Options,
};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn an_unpaid_call_gets_the_requirements_and_a_signed_payment_buys_the_answer_once() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let mut arguments = tool_arguments(&caller_body("diagnose_growth"));
    arguments["coach"] = json!("mary");
    let mut other = arguments.clone();
    other["messages"][0]["content"] = json!("A different question, with the same authorization.");
    let tool = "diagnose_growth";
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call(tool, arguments.clone(), "none"),
            call(tool, arguments.clone(), "sign"),
            // A retry signs a new authorization: it replays and settles nothing.
            call(tool, arguments.clone(), "sign"),
            // The paid authorization again: a replay too.
            call(tool, arguments.clone(), "reuse:1"),
            // One authorization pays once: it buys nothing else.
            call(tool, other, "reuse:1"),
        ],
    )
    .await;
    let r = &report["results"];
    assert_payment_required(&r[0], tool, "180000", "payment_required");

    assert_answer_matches(&r[1], "diagnose_growth/response.json");
    let settlement = &r[1]["meta"]["x402/payment-response"];
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(
        settlement["payer"].as_str().map(str::to_ascii_lowercase),
        report["payer"].as_str().map(str::to_ascii_lowercase)
    );
    let nonce = nonce_sent(&r[1]);
    assert_eq!(
        settlement["transaction"].as_str(),
        rig.facilitator.transaction_of(&nonce).as_deref()
    );
    assert!(r[1]["meta"].get("grove/idempotent-replay").is_none());

    for replay in [&r[2], &r[3]] {
        assert_eq!(
            replay["structured"], r[1]["structured"],
            "the stored answer"
        );
        assert_eq!(replay["meta"]["grove/idempotent-replay"], true);
        assert_eq!(replay["meta"]["x402/payment-response"]["success"], true);
    }
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_sent(&r[2])), 0);
    assert_payment_required(&r[4], tool, "180000", "payment_already_used");

    assert_eq!(rig.facilitator.settle_calls(), 1, "one settlement");
    assert_eq!(rig.facilitator.transfers(), 1);
    assert_eq!(rig.llm.received(), 1, "one model call");
    let receipt = &r[1]["structured"]["receipt"]["url"];
    let stored = rig
        .app
        .get_json(receipt.as_str().expect("receipt url"))
        .await;
    assert_eq!(stored["status"], "completed");
}

#[tokio::test]
async fn an_explicit_key_replays_its_call_and_refuses_other_arguments_without_charging() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let mut keyless = tool_arguments(&caller_body("design_offer"));
    keyless["coach"] = json!(
        catalog::coaches_offering(catalog::ModeId::DesignOffer)
            .next()
            .expect("a coach")
            .id
            .as_str()
    );
    let mut keyed = keyless.clone();
    keyed["idempotency_key"] = json!("order-1");
    let mut other = keyed.clone();
    other["messages"][0]["content"] = json!("A different question entirely, with 12 leads.");
    let tool = "design_offer";
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            // The requirements to sign come from an unpaid call.
            call(tool, keyed.clone(), "none"),
            call(tool, keyed.clone(), "sign"),
            // The same key and arguments with a new authorization: the stored answer.
            call(tool, keyed, "sign"),
            // The same key on other arguments: refused, and nothing is charged.
            call(tool, other, "sign"),
            // The same arguments without the key: keyed and keyless scopes are separate.
            call(tool, keyless, "sign"),
        ],
    )
    .await;
    let r = &report["results"];
    assert_payment_required(&r[0], tool, "250000", "payment_required");
    assert_answer_matches(&r[1], "design_offer/response.json");
    assert!(r[1]["meta"].get("grove/idempotent-replay").is_none());

    assert_eq!(r[2]["structured"], r[1]["structured"], "the stored answer");
    assert_eq!(r[2]["meta"]["grove/idempotent-replay"], true);
    assert_eq!(r[2]["meta"]["x402/payment-response"]["success"], true);
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_sent(&r[2])), 0);

    assert_refused(&r[3], "idempotency_key_reused");
    assert_eq!(rig.facilitator.requests_for_nonce(&nonce_sent(&r[3])), 0);

    assert_answer_matches(&r[4], "design_offer/response.json");
    assert!(r[4]["meta"].get("grove/idempotent-replay").is_none());

    assert_eq!(
        rig.facilitator.settle_calls(),
        2,
        "the keyed call and the keyless one"
    );
    assert_eq!(rig.llm.received(), 2, "one model call each");
}

#[tokio::test]
async fn a_forged_payment_is_refused_with_the_requirements_and_charges_nothing() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let mut arguments = tool_arguments(&caller_body("handle_objections"));
    let coach = catalog::coaches_offering(catalog::ModeId::HandleObjections)
        .next()
        .expect("a coach");
    arguments["coach"] = json!(coach.id.as_str());
    let tool = "handle_objections";
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call(tool, arguments.clone(), "none"),
            call(tool, arguments.clone(), "forge_from"),
            call(tool, arguments, "forge_signature"),
        ],
    )
    .await;
    let r = &report["results"];
    assert_payment_required(&r[0], tool, "450000", "payment_required");
    assert_payment_required(&r[1], tool, "450000", "payment_invalid:signer_mismatch");
    let reason = r[2]["structured"]["error"].as_str().unwrap_or_default();
    assert!(
        [
            "payment_invalid:signer_mismatch",
            "payment_invalid:bad_signature"
        ]
        .contains(&reason),
        "{reason}"
    );
    assert_payment_required(&r[2], tool, "450000", reason);
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn refusals_before_any_charge_name_every_problem_and_carry_no_requirements() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let mut valid = tool_arguments(&caller_body("diagnose_growth"));
    valid["coach"] = json!("mary");
    let mut invalid = valid.clone();
    invalid["coach"] = json!("nobody");
    invalid["messages"] = json!([]);
    invalid["idempotency_key"] = json!("");
    let mut stale_consent = action_body();
    stale_consent["consent"]["captured_at"] = json!("2019-01-01T00:00:00Z");
    let mut cooled = action_body();
    cooled["customer"]["first_name"] = json!("Dani");
    cooled["min_days_since_last_request"] = json!(30);
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call("diagnose_growth", valid, "none"),
            // A valid payment does not make an invalid call chargeable.
            call("diagnose_growth", invalid, "sign"),
            call("review_request", action_body(), "none"),
            call("review_request", stale_consent, "sign"),
            call("review_request", action_body(), "sign"),
            // The same phone again inside the cooldown asked for.
            call("review_request", cooled, "sign"),
        ],
    )
    .await;
    let r = &report["results"];
    let error = assert_refused(&r[1], "validation_failed");
    let paths: Vec<&str> = error["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["path"].as_str())
        .collect();
    for path in ["/coach", "/messages", "/idempotency_key"] {
        assert!(paths.contains(&path), "{path} in {paths:?}");
    }
    assert_payment_required(&r[2], "review_request", "120000", "payment_required");
    assert_refused(&r[3], "consent_invalid");
    assert_answer_matches(&r[4], "actions/review_request/response.json");
    assert_refused(&r[5], "cooldown_active");
    assert_eq!(rig.facilitator.settle_calls(), 1, "only the review sold");
    assert_eq!(rig.llm.received(), 0);
}

#[tokio::test]
async fn an_unknown_settlement_is_an_error_with_the_receipt_and_never_a_price() {
    let Some(python) = mcp::python() else { return };
    let rig = rig_with(Options {
        deadline_s: 2,
        extra_env: vec![("X402_FACILITATOR_TIMEOUT_S".into(), "1".into())],
        ..Options::default()
    })
    .await;
    // The facilitator hangs, then is down: nothing moves and nothing is known.
    rig.facilitator
        .script_next(SettleScript::Hang(Duration::from_secs(5)));
    rig.facilitator.script(SettleScript::Down);
    let mut arguments = tool_arguments(&caller_body("diagnose_growth"));
    arguments["coach"] = json!("mary");
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call("diagnose_growth", arguments.clone(), "none"),
            call("diagnose_growth", arguments, "sign"),
        ],
    )
    .await;
    let error = assert_refused(&report["results"][1], "settlement_pending");
    assert!(error["retry_after_s"].as_u64().is_some_and(|s| s > 0));
    let receipt = error["receipt"]["url"].as_str().expect("receipt url");
    let stored = rig.app.get_json(receipt).await;
    assert_eq!(stored["status"], "pending");
    assert_eq!(stored["settlement"], "unknown");
    assert_eq!(rig.facilitator.transfers(), 0);
    assert_eq!(
        rig.llm.received(),
        0,
        "nothing runs while the money is unknown"
    );
}

#[tokio::test]
async fn a_refused_settlement_returns_the_requirements_with_the_failed_settlement() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    rig.facilitator
        .script_next(SettleScript::RefuseWith200("insufficient_funds"));
    let mut arguments = tool_arguments(&caller_body("diagnose_growth"));
    arguments["coach"] = json!("mary");
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![
            call("diagnose_growth", arguments.clone(), "none"),
            call("diagnose_growth", arguments, "sign"),
        ],
    )
    .await;
    let refused = &report["results"][1];
    assert_payment_required(
        refused,
        "diagnose_growth",
        "180000",
        "settlement_failed:insufficient_funds",
    );
    let failed = &refused["structured"]["x402/payment-response"];
    assert_eq!(failed["success"], false);
    assert_eq!(failed["errorReason"], "insufficient_funds");
    assert!(refused["meta"].get("x402/payment-response").is_none());
    assert_eq!(rig.facilitator.transfers(), 0);
    assert_eq!(rig.llm.received(), 0, "no work without payment");
}
