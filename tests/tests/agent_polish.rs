//! What an agent (or its developer) reads before paying: a 405 names the route's real methods,
//! the OpenAPI document is complete enough to generate a client from, and the guides and the
//! skill file show the official x402 clients next to the raw flow, with a table of contents.

use grove_tests::{compile, spawn_app};
use serde_json::{Value, json};
use std::collections::HashSet;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every `(path, method, operation)` of the document.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                out.push((path.clone(), method.to_owned(), op.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn a_405_carries_the_routes_real_allow_header() {
    let app = spawn_app().await;
    for (method, path, allowed, not_allowed) in [
        (reqwest::Method::POST, "/api/v1/agents", "GET", "POST"),
        (
            reqwest::Method::GET,
            "/api/v1/actions/review-request/call",
            "POST",
            "GET",
        ),
        (
            reqwest::Method::DELETE,
            "/api/v1/receipts/abc",
            "GET",
            "POST",
        ),
        (
            reqwest::Method::PUT,
            "/api/v1/actions/review-request/requests/rr_x/cancel",
            "POST",
            "GET",
        ),
    ] {
        let r = app
            .client
            .request(method.clone(), app.url(path))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 405, "{method} {path}");
        let allow: Vec<String> = r
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .collect();
        assert!(
            allow.iter().any(|m| m == allowed),
            "{method} {path}: Allow {allow:?}"
        );
        assert!(
            !allow.iter().any(|m| m == not_allowed),
            "{method} {path}: Allow {allow:?} names a method the route does not have"
        );
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"]["code"], "method_not_allowed");
    }
}

/// `Retry-After` is documented only where the server sends it: 409 `request_in_progress`, 429
/// `rate_limited`, 503 (`unavailable`, `payments_disabled`, `/readyz` not ready) and 504
/// (`still_running`, `settlement_pending`); the tests of each answer check the header at run
/// time. A 429 is documented on every operation the rate limits apply to, and on no other
/// (probes and Twilio's webhooks are never limited; the metrics are on the admin listener).
#[tokio::test]
async fn retry_after_and_429_are_documented_only_as_the_server_sends_them() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    for (path, method, op) in operations(&doc) {
        let never_limited = [
            "/healthz",
            "/readyz",
            "/webhooks/sms/status",
            "/webhooks/sms/inbound",
        ]
        .contains(&path.as_str());
        assert_eq!(
            op["responses"].get("429").is_some(),
            !never_limited,
            "{method} {path}: a 429 where the limits apply, none elsewhere"
        );
        for (status, response) in op["responses"].as_object().expect("responses") {
            if response["headers"].get("Retry-After").is_some() {
                let waiting_helps = match status.as_str() {
                    "409" => response["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("request_in_progress")),
                    "429" | "503" | "504" => true,
                    _ => false,
                };
                assert!(
                    waiting_helps,
                    "{method} {path} documents Retry-After on {status}"
                );
            }
        }
    }
}

#[tokio::test]
async fn every_operation_has_a_unique_operation_id() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    let mut seen = HashSet::new();
    for (path, method, op) in operations(&doc) {
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric()),
            "{method} {path}: {id} is not a plain identifier"
        );
        assert!(seen.insert(id.to_owned()), "operationId {id} is used twice");
    }
    // 21: the metrics left for the admin listener (issue 28).
    assert!(seen.len() >= 21, "{seen:?}");
}

#[tokio::test]
async fn openapi_documents_client_errors_retry_after_readiness_and_the_phone() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    for (path, method, op) in operations(&doc) {
        let responses = op["responses"].as_object().expect("responses");
        if op.get("x-payment-info").is_none() {
            assert!(
                responses.keys().any(|k| k.starts_with('4')),
                "free operation {method} {path} documents no 4xx"
            );
        }
        // Where waiting helps: a 409 for a request still in progress, and every 503.
        for (status, response) in responses {
            let waiting_helps = status == "503"
                || (status == "409"
                    && response["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("request_in_progress")));
            if waiting_helps {
                assert!(
                    response["headers"]["Retry-After"].is_object(),
                    "{method} {path} {status} lacks Retry-After"
                );
            }
        }
        for (status, response) in responses {
            if status.starts_with('4') && status != "402" && response.get("content").is_some() {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/Error",
                    "{method} {path} {status}"
                );
            }
        }
    }

    let ready = &doc["paths"]["/readyz"]["get"]["responses"];
    assert!(ready["200"].is_object());
    assert!(ready["503"].is_object(), "/readyz documents its 503");
    assert!(ready["503"]["headers"]["Retry-After"].is_object());

    let phone = &doc["components"]["schemas"]["review_request_request"]["properties"]["customer"]["properties"]
        ["phone"];
    let pattern = phone["pattern"].as_str().expect("pattern");
    assert!(pattern.starts_with(r"^\+1"), "{pattern}");
    assert!(
        phone["description"]
            .as_str()
            .is_some_and(|d| d.contains("+1"))
    );
    let check = compile(&json!({"type": "string", "pattern": pattern}));
    assert!(check.is_valid(&json!("+13055550142")));
    for not_us in [
        "+447700900123",
        "+33612345678",
        "+10555550142",
        "+13051550142",
    ] {
        assert!(
            !check.is_valid(&json!(not_us)),
            "{not_us} matched {pattern}"
        );
    }

    // The 422 rule is documented where clients look: the error code and each detail's code.
    let error = &doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"];
    assert!(
        error["code"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("invalid_request"))
    );
    assert!(error["details"]["items"]["properties"]["code"].is_object());
}

/// The `href="#…"` anchors of the table of contents, and the ids they must reach.
fn toc_links(html: &str) -> Vec<String> {
    let nav = html
        .split_once("<nav")
        .and_then(|(_, rest)| rest.split_once("</nav>"))
        .map(|(nav, _)| nav)
        .expect("a <nav> table of contents");
    nav.split("href=\"#")
        .skip(1)
        .filter_map(|s| s.split_once('"').map(|(id, _)| id.to_owned()))
        .collect()
}

#[tokio::test]
async fn guides_show_the_official_clients_with_contents_and_a_narrow_layout() {
    let app = spawn_app().await;
    for path in ["/docs/agents", "/docs/actions"] {
        let html = app.get(path).await.text().await.expect("html");
        for needle in [
            "npm install @x402/fetch",
            "wrapFetchWithPayment",
            "pip install &quot;x402[httpx,evm]&quot;",
            "x402HttpxClient",
            "curl -si -X POST",
            "PAYMENT-SIGNATURE",
            "name=\"viewport\"",
            "@media (max-width:40rem)",
            "white-space:pre-wrap",
        ] {
            assert!(html.contains(needle), "{path} lacks {needle}");
        }
        let links = toc_links(&html);
        assert!(links.len() >= 4, "{path}: {links:?}");
        for id in ["clients", "pay", "sandbox", "errors"] {
            assert!(links.iter().any(|l| l == id), "{path}: contents lack #{id}");
        }
        for id in &links {
            assert!(
                html.contains(&format!("id=\"{id}\"")),
                "{path}: #{id} leads nowhere"
            );
        }
        // Table cells say which column they are, for the stacked layout on a phone.
        if path == "/docs/agents" {
            assert!(html.contains("data-label=\"price\""));
        }
    }
}

#[tokio::test]
async fn the_skill_file_shows_the_official_clients_and_a_table_of_contents() {
    let app = spawn_app().await;
    let skill = app
        .get("/skills/grove-x402/SKILL.md")
        .await
        .text()
        .await
        .expect("markdown");
    for needle in [
        "## Contents",
        "npm install @x402/fetch",
        "wrapFetchWithPayment",
        "pip install \"x402[httpx,evm]\"",
        "x402HttpxClient",
        "curl -si -X POST",
        "invalid_request",
    ] {
        assert!(skill.contains(needle), "SKILL.md lacks {needle}");
    }
    let headings: Vec<&str> = skill
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter(|h| *h != "Contents")
        .collect();
    assert!(headings.len() >= 6, "{headings:?}");
    for h in headings {
        assert!(
            skill.contains(&format!("- [{h}](#")),
            "contents lack the section {h:?}"
        );
    }
}
