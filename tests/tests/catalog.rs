//! Every catalog field against the spec's tables (spec 2.1, 2.2, 2.7, 4; CONTRACT 2).

use grove_tests::{BASE_URL, PAY_TO, spawn_app, spawn_app_with};
use serde_json::{Value, json};
use std::collections::HashSet;

/// Spec 2.1, transcribed.
const COACHES: &[(&str, &str, &[&str])] = &[
    (
        "mary",
        "Growth strategy",
        &[
            "diagnose_growth",
            "design_offer",
            "rewrite_pricing",
            "funnel_review",
            "write_outbound_sequence",
            "audit_function",
        ],
    ),
    (
        "reed",
        "Sales",
        &[
            "diagnose_growth",
            "design_offer",
            "rewrite_pricing",
            "handle_objections",
            "write_outbound_sequence",
            "audit_function",
        ],
    ),
    (
        "iris",
        "Marketing",
        &[
            "diagnose_growth",
            "funnel_review",
            "design_offer",
            "position_against_alternatives",
            "write_outbound_sequence",
            "audit_function",
        ],
    ),
    (
        "oak",
        "Operations",
        &[
            "diagnose_growth",
            "plan_capacity",
            "draft_sop",
            "audit_function",
        ],
    ),
    (
        "violet",
        "Service & retention",
        &[
            "diagnose_growth",
            "rescue_churn",
            "plan_onboarding",
            "audit_function",
        ],
    ),
    (
        "fern",
        "Technology",
        &[
            "diagnose_growth",
            "decide_stack",
            "map_automation",
            "audit_function",
        ],
    ),
    (
        "willow",
        "People & culture",
        &[
            "diagnose_growth",
            "scope_role",
            "map_accountability",
            "audit_function",
        ],
    ),
];

/// Spec 2.2, transcribed.
const MODES: &[(&str, &str, &str, &[&str])] = &[
    (
        "diagnose_growth",
        "short",
        "$0.18",
        &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
        ],
    ),
    (
        "design_offer",
        "deep",
        "$0.25",
        &[
            "company.what_they_sell",
            "audience.icp",
            "audience.pain",
            "offer.price_usd",
        ],
    ),
    (
        "rewrite_pricing",
        "deep",
        "$0.25",
        &[
            "offer.price_usd",
            "offer.promise",
            "metrics.average_order_value_usd",
            "audience.icp",
        ],
    ),
    (
        "funnel_review",
        "deep",
        "$0.25",
        &[
            "metrics.traffic_per_month",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
            "company.website",
        ],
    ),
    (
        "write_outbound_sequence",
        "deep",
        "$0.25",
        &[
            "audience.icp",
            "audience.pain",
            "offer.promise",
            "company.what_they_sell",
        ],
    ),
    (
        "audit_function",
        "deep",
        "$0.25",
        &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    ),
    (
        "handle_objections",
        "flagship",
        "$0.45",
        &[
            "offer.price_usd",
            "offer.promise",
            "audience.icp",
            "metrics.close_rate_pct",
        ],
    ),
    (
        "position_against_alternatives",
        "flagship",
        "$0.45",
        &[
            "company.what_they_sell",
            "audience.icp",
            "offer.price_usd",
            "company.industry",
        ],
    ),
    (
        "plan_capacity",
        "flagship",
        "$0.45",
        &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.average_order_value_usd",
            "company.stage",
        ],
    ),
    (
        "draft_sop",
        "flagship",
        "$0.45",
        &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    ),
    (
        "rescue_churn",
        "flagship",
        "$0.45",
        &[
            "metrics.monthly_churn_pct",
            "metrics.average_order_value_usd",
            "audience.icp",
            "company.what_they_sell",
        ],
    ),
    (
        "plan_onboarding",
        "deep",
        "$0.25",
        &[
            "company.what_they_sell",
            "offer.promise",
            "audience.icp",
            "metrics.monthly_churn_pct",
        ],
    ),
    (
        "decide_stack",
        "flagship",
        "$0.45",
        &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    ),
    (
        "map_automation",
        "deep",
        "$0.25",
        &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    ),
    (
        "scope_role",
        "flagship",
        "$0.45",
        &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
            "metrics.leads_per_month",
        ],
    ),
    (
        "map_accountability",
        "deep",
        "$0.25",
        &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    ),
];

fn price_of(mode: &str) -> &'static str {
    MODES
        .iter()
        .find(|m| m.0 == mode)
        .map(|m| m.2)
        .expect("mode in spec table")
}

#[tokio::test]
async fn agents_catalog_matches_the_spec_tables() {
    let app = spawn_app().await;
    let c = app.get_json("/api/v1/agents").await;
    let keys: HashSet<&str> = c
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "service",
        "version",
        "description",
        "call_shape",
        "payment",
        "agents",
        "modes",
        "openapi",
        "docs",
    ] {
        assert!(keys.contains(k), "catalog lacks {k}");
    }
    assert_eq!(c["service"], "grove");
    assert_eq!(c["version"], "v1");
    assert_eq!(c["openapi"], "/api/v1/openapi.json");
    assert_eq!(c["docs"], "/docs/agents");

    let agents = c["agents"].as_array().expect("agents");
    assert_eq!(agents.len(), COACHES.len());
    for (agent, (id, domain, modes)) in agents.iter().zip(COACHES) {
        assert_eq!(agent["id"], *id);
        assert_eq!(agent["domain"], *domain);
        assert_eq!(agent["modes"], json!(modes), "{id} modes");
        assert_eq!(agent["url"], format!("/api/v1/agents/{id}/call"));
        for field in ["name", "tagline"] {
            assert!(
                agent[field].as_str().is_some_and(|s| !s.is_empty()),
                "{id}.{field}"
            );
        }
        let details = agent["mode_details"].as_array().expect("mode_details");
        let detail_ids: Vec<&str> = details.iter().filter_map(|d| d["id"].as_str()).collect();
        assert_eq!(detail_ids, *modes, "{id} mode_details order");
        for d in details {
            let mode = d["id"].as_str().expect("id");
            assert_eq!(d["price"], price_of(mode), "{id}/{mode} price");
            assert!(d["summary"].as_str().is_some_and(|s| s.len() > 10));
            assert_eq!(
                d.as_object().expect("obj").len(),
                3,
                "mode_details has exactly id, price, summary"
            );
        }
    }

    let modes = c["modes"].as_array().expect("modes");
    assert_eq!(modes.len(), 16);
    for (m, (id, tier, price, context)) in modes.iter().zip(MODES) {
        assert_eq!(m["id"], *id);
        assert_eq!(m["tier"], *tier, "{id} tier");
        assert_eq!(m["price"], *price, "{id} price");
        assert_eq!(
            m["recommended_context"],
            json!(context),
            "{id} recommended_context"
        );
        assert_eq!(
            m["request_schema"],
            format!("/api/v1/schemas/{id}/request.json")
        );
        assert_eq!(
            m["response_schema"],
            format!("/api/v1/schemas/{id}/response.json")
        );
        assert!(m["summary"].as_str().is_some_and(|s| !s.is_empty()));
    }
}

#[tokio::test]
async fn each_coach_summarises_shared_modes_in_its_own_words() {
    let app = spawn_app().await;
    let c = app.get_json("/api/v1/agents").await;
    let summaries: Vec<String> = c["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .flat_map(|a| a["mode_details"].as_array().cloned().unwrap_or_default())
        .filter(|d| d["id"] == "diagnose_growth")
        .filter_map(|d| d["summary"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(summaries.len(), 7);
    assert_eq!(
        summaries.iter().collect::<HashSet<_>>().len(),
        7,
        "seven distinct summaries"
    );
}

#[tokio::test]
async fn payment_block_says_which_headers_and_whether_enabled() {
    let app = spawn_app().await;
    let p = app.get_json("/api/v1/agents").await["payment"].clone();
    assert_eq!(p["protocol"], "x402");
    assert_eq!(p["enabled"], true);
    assert_eq!(p["network"], "eip155:8453");
    assert_eq!(p["testnet"], false);
    let note = p["note"].as_str().expect("note");
    assert!(
        note.contains("PAYMENT-SIGNATURE") && note.contains("X-PAYMENT"),
        "{note}"
    );
    assert!(
        note.contains("DEVELOPMENT"),
        "local verification is labelled: {note}"
    );

    let off = spawn_app_with(&[], &["X402_PAY_TO"]).await;
    for path in ["/api/v1/agents", "/api/v1/actions"] {
        assert_eq!(
            off.get_json(path).await["payment"]["enabled"],
            false,
            "{path}"
        );
    }
}

#[tokio::test]
async fn action_catalog_matches_spec_2_7() {
    let app = spawn_app().await;
    let c = app.get_json("/api/v1/actions").await;
    for k in [
        "service",
        "version",
        "description",
        "call_shape",
        "payment",
        "fulfillment",
        "actions",
        "idempotency",
        "tags",
        "docs",
    ] {
        assert!(c.get(k).is_some(), "action catalog lacks {k}");
    }
    for k in ["protocol", "enabled", "network", "testnet", "note"] {
        assert!(c["payment"].get(k).is_some(), "payment lacks {k}");
    }
    assert_eq!(c["version"], "v1");
    assert_eq!(c["docs"], "/docs/actions");
    assert_eq!(c["idempotency"]["header"], "Idempotency-Key");
    assert!(
        c["tags"]
            .as_array()
            .is_some_and(|t| t.iter().all(Value::is_string))
    );
    // The embedded default is the outbox: the catalog says nothing is sent.
    assert_eq!(c["fulfillment"]["enabled"], false);
    assert!(
        c["fulfillment"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("DEVELOPMENT"))
    );

    let actions = c["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 1);
    let a = &actions[0];
    assert_eq!(a["id"], "review_request");
    assert_eq!(a["slug"], "review-request");
    assert_eq!(a["price"], "$0.12");
    assert_eq!(
        a["endpoint"],
        format!("{BASE_URL}/api/v1/actions/review-request/call")
    );
    assert_eq!(
        a["request_schema"],
        format!("{BASE_URL}/api/v1/schemas/actions/review_request/request.json")
    );
    assert_eq!(
        a["response_schema"],
        format!("{BASE_URL}/api/v1/schemas/actions/review_request/response.json")
    );
    for k in ["name", "summary"] {
        assert!(a[k].as_str().is_some_and(|s| !s.is_empty()));
    }
}

#[tokio::test]
async fn well_known_x402_lists_every_paid_resource_absolutely() {
    let app = spawn_app().await;
    let d = app.get_json("/.well-known/x402").await;
    assert_eq!(d["version"], 1);
    assert_eq!(d["service"], "grove");
    let resources: Vec<&str> = d["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (id, _, _) in COACHES {
        assert!(
            resources.contains(&format!("{BASE_URL}/api/v1/agents/{id}/call").as_str()),
            "{id}"
        );
    }
    assert!(resources.contains(&format!("{BASE_URL}/api/v1/actions/review-request/call").as_str()));
    assert_eq!(d["ownershipProofs"], json!([PAY_TO]));
    assert_eq!(d["skill"], format!("{BASE_URL}/skills/grove-x402/SKILL.md"));
    assert_eq!(d["openapi"], format!("{BASE_URL}/api/v1/openapi.json"));
    assert!(
        d["instructions"]
            .as_str()
            .is_some_and(|s| s.contains("402"))
    );
}

#[tokio::test]
async fn guides_and_skill_file_are_served_and_readable() {
    let app = spawn_app().await;
    for (path, must) in [
        (
            "/docs/agents",
            vec![
                "id=\"sandbox\"",
                "x-grove-sandbox: 1",
                "PAYMENT-SIGNATURE",
                "402",
                "curl",
                "diagnose_growth",
                "$0.45",
            ],
        ),
        (
            "/docs/actions",
            vec!["id=\"sandbox\"", "review-request", "$0.12", "curl", "402"],
        ),
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .expect("ct")
                .starts_with("text/html")
        );
        let html = r.text().await.expect("body");
        assert!(!html.contains("<script"), "{path} needs no JavaScript");
        for m in must {
            assert!(html.contains(m), "{path} lacks {m}");
        }
    }
    let r = app.get("/skills/grove-x402/SKILL.md").await;
    assert_eq!(r.status(), 200);
    let md = r.text().await.expect("body");
    for m in [
        "name: grove-x402",
        "PAYMENT-SIGNATURE",
        "USD Coin",
        "eip155:8453",
        "Idempotency-Key",
        "x-grove-sandbox",
        "/api/v1/agents",
    ] {
        assert!(md.contains(m), "skill lacks {m}");
    }
}

#[tokio::test]
async fn service_name_renames_the_sandbox_header_and_skill_path() {
    let app = spawn_app_with(&[("SERVICE_NAME", "acme")], &[]).await;
    assert_eq!(app.get("/skills/acme-x402/SKILL.md").await.status(), 200);
    assert_eq!(app.get("/skills/grove-x402/SKILL.md").await.status(), 404);
    let body = grove_tests::coaching_body("diagnose_growth");
    let r = app
        .post_json(
            "/api/v1/agents/mary/call",
            &body,
            &[("x-acme-sandbox", "1")],
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.get_json("/api/v1/agents").await["service"], "acme");
}

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = spawn_app().await;
    assert_eq!(app.get_json("/healthz").await["status"], "ok");
    assert_eq!(app.get("/readyz").await.status(), 200);
}

#[tokio::test]
async fn unknown_paths_and_methods_get_the_error_shape() {
    let app = spawn_app().await;
    let r = app.get("/api/v1/nothing").await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "not_found");
    assert!(
        body["error"]["request_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let r = app
        .client
        .delete(app.url("/api/v1/agents"))
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 405);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "method_not_allowed");
}
