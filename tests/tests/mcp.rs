//! Grove as MCP tools (issue 13), tested with an off-the-shelf client: PyPI `mcp` lists and calls
//! the tools over streamable HTTP, and PyPI `x402` signs real EIP-3009 authorizations from the
//! requirements an unpaid call returns (x402 MCP transport: `_meta["x402/payment"]` in,
//! `_meta["x402/payment-response"]` out). The loopback facilitator counts settlements and the
//! loopback model counts calls, so replays and refusals are seen to charge and run nothing.

use grove_common::catalog::{self, MODES, REVIEW_REQUEST};
use grove_tests::{
    action_body, compile, db,
    facilitator::SettleScript,
    llm::caller_body,
    mcp::{self, call, discover, nonce_sent, read, tool_arguments},
    paid::{Options, PaidApp, spawn_paid},
};
use serde_json::{Value, json};
use std::{path::PathBuf, time::Duration};

async fn rig() -> PaidApp {
    rig_with(Options::default()).await
}

/// On PostgreSQL the jobs run through Redis, as in production.
async fn rig_with(opts: Options) -> PaidApp {
    spawn_paid(Options {
        redis_workers: usize::from(db::backend() == "postgres"),
        ..opts
    })
    .await
}

fn published(path: &str) -> Value {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(path);
    serde_json::from_str(&std::fs::read_to_string(&file).expect("schema file")).expect("JSON")
}

/// Checks `envelope` against `schemas/<path>` and that the text content repeats it.
fn assert_answer_matches(result: &Value, schema_path: &str) {
    assert_eq!(result["is_error"], false, "{result}");
    let envelope = &result["structured"];
    let errors: Vec<String> = compile(&published(schema_path))
        .iter_errors(envelope)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{schema_path}: {errors:?}");
    let text: Value =
        serde_json::from_str(result["text"][0].as_str().expect("text")).expect("JSON");
    assert_eq!(&text, envelope, "content[0].text carries the same JSON");
}

/// An x402 v2 PaymentRequired for `tool` at `atomic` USDC units, with `error`.
fn assert_payment_required(result: &Value, tool: &str, atomic: &str, error: &str) {
    assert_eq!(result["is_error"], true, "{result}");
    let required = &result["structured"];
    assert_eq!(required["x402Version"], 2);
    assert_eq!(required["error"], error);
    assert_eq!(required["resource"]["url"], format!("mcp://tool/{tool}"));
    let accepts = required["accepts"].as_array().expect("accepts");
    assert_eq!(accepts.len(), 1);
    assert_eq!(accepts[0]["scheme"], "exact");
    assert_eq!(accepts[0]["network"], "eip155:8453");
    assert_eq!(accepts[0]["amount"], atomic);
    assert_eq!(accepts[0]["payTo"], grove_tests::PAY_TO);
    let text: Value =
        serde_json::from_str(result["text"][0].as_str().expect("text")).expect("JSON");
    assert_eq!(&text, required, "content[0].text carries the same JSON");
}

/// An error result in the HTTP error body with `code`, and nothing an x402 client would pay.
fn assert_refused(result: &Value, code: &str) -> Value {
    assert_eq!(result["is_error"], true, "{result}");
    let body = &result["structured"];
    assert!(
        body.get("x402Version").is_none() && body.get("accepts").is_none(),
        "a refusal is not a price: {body}"
    );
    assert_eq!(body["error"]["code"], code, "{body}");
    body["error"].clone()
}

#[tokio::test]
async fn a_client_connects_with_the_current_protocol_and_with_legacy_initialize() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let url = rig.app.url("/mcp");

    let current = mcp::run(&python, &url, "auto", vec![discover()]).await;
    let legacy = mcp::run(&python, &url, "legacy", vec![discover()]).await;
    assert_eq!(current["protocol_version"], "2026-07-28");
    assert_eq!(legacy["protocol_version"], "2025-11-25");
    for report in [&current, &legacy] {
        let seen = &report["results"][0];
        assert_eq!(seen["server_name"], "grove");
        assert!(
            seen["instructions"]
                .as_str()
                .is_some_and(|i| i.contains("x402/payment"))
        );
    }
    assert_eq!(
        current["results"][0]["tools"], legacy["results"][0]["tools"],
        "the tool list does not depend on the connection"
    );

    // Stateless: a legacy `initialize` gets a JSON answer and no session to keep.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let post = |host: Option<&str>| {
        let mut req = rig
            .app
            .client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        if let Some(host) = host {
            req = req.header("host", host);
        }
        req.send()
    };
    let r = post(None).await.expect("reaches /mcp");
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_none());
    assert!(
        r.headers()["content-type"]
            .to_str()
            .is_ok_and(|ct| ct.starts_with("application/json"))
    );
    assert!(r.headers().get("x-request-id").is_some());
    // The public host is served; another host is refused (DNS rebinding).
    let public = post(Some("grove.test")).await.expect("reaches /mcp");
    assert_eq!(public.status(), 200);
    let other = post(Some("attacker.example")).await.expect("reaches /mcp");
    assert_eq!(other.status(), 403);
}

#[tokio::test]
async fn the_tools_are_the_sixteen_modes_and_the_review_request_with_schemas_and_prices() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let skill_uri = format!("{}/skills/grove-x402/SKILL.md", grove_tests::BASE_URL);
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "auto",
        vec![discover(), read(&skill_uri)],
    )
    .await;
    let seen = &report["results"][0];
    let tools = seen["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut expected: Vec<&str> = MODES.iter().map(|m| m.id.as_str()).collect();
    expected.push(REVIEW_REQUEST.id);
    assert_eq!(names, expected);

    for (tool, mode) in tools.iter().zip(MODES.iter()) {
        let price = mode.price().to_string();
        let name = mode.id.as_str();
        assert!(
            tool["title"]
                .as_str()
                .is_some_and(|t| t.ends_with(&format!("({price})")))
        );
        assert!(
            tool["description"]
                .as_str()
                .is_some_and(|d| d.contains(&format!("{price} per call"))),
            "{name}: the description names the price"
        );
        assert_eq!(tool["annotations"]["readOnlyHint"], false, "{name}: paid");
        let request = published(&format!("{name}/request.json"));
        let input = &tool["inputSchema"];
        let properties = input["properties"].as_object().expect("properties");
        assert!(
            !properties.contains_key("mode"),
            "{name}: the tool is the mode"
        );
        for (field, schema) in request["properties"].as_object().expect("props") {
            if field != "mode" {
                assert_eq!(&properties[field], schema, "{name}.{field} as published");
            }
        }
        assert_eq!(properties["sandbox"]["type"], "boolean");
        assert_eq!(properties["idempotency_key"]["maxLength"], 255);
        let offering: Vec<&str> = catalog::coaches_offering(mode.id)
            .map(|c| c.id.as_str())
            .collect();
        let coaches: Vec<&str> = properties["coach"]["oneOf"]
            .as_array()
            .expect("oneOf")
            .iter()
            .filter_map(|c| c["const"].as_str())
            .collect();
        assert_eq!(coaches, offering, "{name}: only the coaches offering it");
        let required = input["required"].as_array().expect("required");
        assert_eq!(
            required.contains(&json!("coach")),
            offering.len() > 1,
            "{name}: coach required unless one coach offers the mode"
        );
        assert_eq!(
            tool["outputSchema"],
            published(&format!("{name}/response.json"))
        );
    }
    let review = &tools[16];
    assert!(
        review["description"]
            .as_str()
            .is_some_and(|d| d.contains("$0.12 per call"))
    );
    assert_eq!(
        review["outputSchema"],
        published("actions/review_request/response.json")
    );
    assert!(review["inputSchema"]["properties"].get("coach").is_none());

    let uris: Vec<&str> = seen["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&skill_uri.as_str()), "{uris:?}");
    assert!(uris.contains(&format!("{}/api/v1/agents", grove_tests::BASE_URL).as_str()));
    let skill = rig
        .app
        .get("/skills/grove-x402/SKILL.md")
        .await
        .text()
        .await
        .expect("skill");
    assert_eq!(report["results"][1]["contents"][0]["text"], skill);
    assert!(skill.contains(&format!("{}/mcp", grove_tests::BASE_URL)));
    assert!(
        skill.contains("x402/payment"),
        "the skill file shows paying over MCP"
    );
    for guide in ["/docs/agents", "/docs/actions"] {
        let html = rig.app.get(guide).await.text().await.expect("guide");
        assert!(html.contains("id=\"mcp\""), "{guide} has an MCP section");
    }
}

#[tokio::test]
async fn a_sandbox_call_is_free_and_its_envelope_matches_the_published_schema() {
    let Some(python) = mcp::python() else { return };
    let rig = rig().await;
    let mut growth = tool_arguments(&caller_body("diagnose_growth"));
    growth["coach"] = json!("iris");
    growth["sandbox"] = json!(true);
    let mut role = tool_arguments(&caller_body("scope_role"));
    role["sandbox"] = json!(true);
    let mut review = action_body();
    review["sandbox"] = json!(true);
    // Through the legacy handshake: tool calls work the same on both protocols.
    let report = mcp::run(
        &python,
        &rig.app.url("/mcp"),
        "legacy",
        vec![
            call("diagnose_growth", growth, "none"),
            call("scope_role", role, "none"),
            call("review_request", review, "none"),
        ],
    )
    .await;
    let results = &report["results"];
    assert_answer_matches(&results[0], "diagnose_growth/response.json");
    assert_eq!(results[0]["structured"]["agent"], "iris");
    assert_eq!(results[0]["structured"]["sandbox"], true);
    assert_answer_matches(&results[1], "scope_role/response.json");
    assert_answer_matches(&results[2], "actions/review_request/response.json");
    assert_eq!(results[2]["structured"]["sandbox"], true);
    assert_eq!(rig.facilitator.settle_calls(), 0);
    assert_eq!(rig.llm.received(), 0);
}

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
