//! Published schemas, and the sandbox: every coach with every mode it offers returns a sample
//! that validates against the schema the server publishes; mutated samples do not.

use grove_tests::{action_body, coaching_body, compile, spawn_app};
use serde_json::{Value, json};

#[tokio::test]
async fn every_mode_publishes_a_request_and_a_response_schema() {
    let app = spawn_app().await;
    let catalog = app.get_json("/api/v1/agents").await;
    for m in catalog["modes"].as_array().expect("modes") {
        for key in ["request_schema", "response_schema"] {
            let path = m[key].as_str().expect("path");
            let schema = app.get_json(path).await;
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{path}"
            );
            assert_eq!(schema["additionalProperties"], false, "{path}");
            compile(&schema);
        }
    }
    for file in ["request", "response"] {
        let schema = app
            .get_json(&format!(
                "/api/v1/schemas/actions/review_request/{file}.json"
            ))
            .await;
        compile(&schema);
    }
}

#[tokio::test]
async fn unknown_schema_paths_are_404() {
    let app = spawn_app().await;
    let r = app.get("/api/v1/schemas/make_coffee/request.json").await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"]["code"],
        "unknown_mode"
    );
    assert_eq!(
        app.get("/api/v1/schemas/diagnose_growth/other.json")
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get("/api/v1/schemas/actions/nope/request.json")
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn every_coach_and_mode_sandbox_sample_validates_against_its_published_schema() {
    let app = spawn_app().await;
    let catalog = app.get_json("/api/v1/agents").await;
    let mut checked = 0;
    for agent in catalog["agents"].as_array().expect("agents") {
        let id = agent["id"].as_str().expect("id");
        for mode in agent["modes"].as_array().expect("modes") {
            let mode = mode.as_str().expect("mode");
            let schema = compile(
                &app.get_json(&format!("/api/v1/schemas/{mode}/response.json"))
                    .await,
            );
            let r = app
                .post_json(
                    &format!("/api/v1/agents/{id}/call"),
                    &coaching_body(mode),
                    &[("x-grove-sandbox", "1")],
                )
                .await;
            assert_eq!(r.status(), 200, "{id}/{mode}");
            assert!(
                r.headers().get("payment-response").is_none(),
                "sandbox settles nothing"
            );
            let body: Value = r.json().await.expect("json");
            let errors: Vec<String> = schema
                .iter_errors(&body)
                .map(|e| format!("{} {}", e.instance_path(), e))
                .collect();
            assert!(errors.is_empty(), "{id}/{mode}: {errors:?}");
            assert_eq!(body["agent"], id);
            assert_eq!(body["mode"], mode);
            assert_eq!(body["sandbox"], true);
            assert_eq!(
                body["usage"],
                json!({"input_tokens": 0, "output_tokens": 0})
            );
            assert_eq!(
                body["receipt"],
                json!({"id": "sandbox", "url": "/docs/agents#sandbox", "expires_at": null})
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 34, "every (coach, mode) pair of spec 2.1");
}

#[tokio::test]
async fn sandbox_is_selected_by_query_or_true_and_still_validates_the_body() {
    let app = spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/reed/call?sandbox=1",
            &coaching_body("handle_objections"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .post_json(
            "/api/v1/agents/reed/call",
            &coaching_body("handle_objections"),
            &[("x-grove-sandbox", "true")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let mut bad = coaching_body("handle_objections");
    bad["messages"] = json!([]);
    let r = app
        .post_json(
            "/api/v1/agents/reed/call",
            &bad,
            &[("x-grove-sandbox", "1")],
        )
        .await;
    assert_eq!(r.status(), 422);
    let r = app
        .post_json(
            "/api/v1/agents/oak/call",
            &coaching_body("handle_objections"),
            &[("x-grove-sandbox", "1")],
        )
        .await;
    assert_eq!(
        r.status(),
        422,
        "a mode the coach does not offer is refused in the sandbox too"
    );
}

#[tokio::test]
async fn sandbox_works_without_payments_or_a_model() {
    let app =
        grove_tests::spawn_app_with(&[], &["X402_PAY_TO", "LLM_PROVIDER", "LLM_BASE_URL"]).await;
    let r = app
        .post_json(
            "/api/v1/agents/fern/call",
            &coaching_body("decide_stack"),
            &[("x-grove-sandbox", "1")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .post_json(
            "/api/v1/actions/review-request/call",
            &action_body(),
            &[("x-grove-sandbox", "1")],
        )
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn action_sandbox_returns_a_schema_valid_tracked_request() {
    let app = spawn_app().await;
    let schema = compile(
        &app.get_json("/api/v1/schemas/actions/review_request/response.json")
            .await,
    );
    let r = app
        .post_json(
            "/api/v1/actions/review-request/call",
            &action_body(),
            &[("x-grove-sandbox", "1")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    let errors: Vec<String> = schema.iter_errors(&body).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(body["sandbox"], true);
    assert!(body["id"].as_str().is_some_and(|id| id.starts_with("rr_")));
}

/// The published schemas are strict: each mutation below must be rejected.
#[tokio::test]
async fn mutated_samples_fail_their_schema() {
    let app = spawn_app().await;
    let catalog = app.get_json("/api/v1/agents").await;
    for m in catalog["modes"].as_array().expect("modes") {
        let mode = m["id"].as_str().expect("id");
        let coach = catalog["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .find(|a| {
                a["modes"]
                    .as_array()
                    .is_some_and(|ms| ms.iter().any(|x| x == mode))
            })
            .and_then(|a| a["id"].as_str())
            .expect("a coach offers every mode");
        let schema = compile(
            &app.get_json(&format!("/api/v1/schemas/{mode}/response.json"))
                .await,
        );
        let sample: Value = app
            .post_json(
                &format!("/api/v1/agents/{coach}/call"),
                &coaching_body(mode),
                &[("x-grove-sandbox", "1")],
            )
            .await
            .json()
            .await
            .expect("json");
        assert!(
            schema.is_valid(&sample),
            "{mode} sample is valid to begin with"
        );

        let mut extra_key = sample.clone();
        extra_key["surprise"] = json!(1);
        let mut extra_deliverable_key = sample.clone();
        extra_deliverable_key["deliverable"]["surprise"] = json!(1);
        let mut over_cap = sample.clone();
        let action = over_cap["actions"][0].clone();
        over_cap["actions"] = Value::Array(vec![action; 6]);
        let mut wrong_enum = sample.clone();
        wrong_enum["thinking"]["confidence"] = json!("certain");
        let mut long_reply = sample.clone();
        long_reply["reply"] = json!("x".repeat(3001));
        let mut missing = sample.clone();
        missing.as_object_mut().expect("object").remove("caveats");
        let mut wrong_agent = sample.clone();
        wrong_agent["agent"] = json!("bob");
        for (what, doc) in [
            ("extra key", extra_key),
            ("extra deliverable key", extra_deliverable_key),
            ("over-cap actions", over_cap),
            ("wrong enum", wrong_enum),
            ("over-long reply", long_reply),
            ("missing key", missing),
            ("unknown agent", wrong_agent),
        ] {
            assert!(!schema.is_valid(&doc), "{mode}: {what} was accepted");
        }
    }
}

#[tokio::test]
async fn served_schema_bytes_are_the_repository_files() {
    let app = spawn_app().await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    for (path, file) in [
        (
            "/api/v1/schemas/draft_sop/response.json",
            "draft_sop/response.json",
        ),
        (
            "/api/v1/schemas/diagnose_growth/request.json",
            "diagnose_growth/request.json",
        ),
        (
            "/api/v1/schemas/actions/review_request/request.json",
            "actions/review_request/request.json",
        ),
    ] {
        let served = app.get(path).await.text().await.expect("text");
        let on_disk = std::fs::read_to_string(root.join(file)).expect("schema file");
        assert_eq!(served, on_disk, "{path}");
    }
}
