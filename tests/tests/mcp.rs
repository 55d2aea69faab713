//! Grove as MCP tools (issue 13), seen by an off-the-shelf client (PyPI `mcp`): both protocol
//! versions, GET and DELETE refused with 405, the tool list against the catalog and the published
//! schemas, the resources, and free sandbox answers. Paying is `mcp_paid.rs`.

use grove_common::catalog::{self, MODES, REVIEW_REQUEST};
use grove_tests::{
    action_body,
    llm::caller_body,
    mcp::{self, assert_answer_matches, call, discover, published, read, rig, tool_arguments},
};
use serde_json::json;

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
async fn get_and_delete_answer_405_since_there_is_no_stream_and_no_session() {
    // Streamable HTTP: a server answers GET with an event stream or 405, and may answer DELETE
    // (ending a session) with 405. Grove has no stream (it sends nothing unasked) and no sessions
    // (stateless), so both are 405 and name POST as the one method. Plain HTTP: no client needed.
    let rig = rig().await;
    let url = rig.app.url("/mcp");
    let get = rig
        .app
        .client
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("reaches /mcp");
    let delete = rig
        .app
        .client
        .delete(&url)
        .header("mcp-session-id", "any")
        .send()
        .await
        .expect("reaches /mcp");
    for (method, r) in [("GET", get), ("DELETE", delete)] {
        assert_eq!(r.status(), 405, "{method}");
        assert_eq!(r.headers()["allow"], "POST", "{method}");
        assert!(r.headers().get("mcp-session-id").is_none(), "{method}");
    }
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
