//! The OpenAPI 3.1 document: parses, lists every path we serve, prices the paid operations,
//! declares the 402 with its header, and embeds the very schemas we publish.

use grove_tests::spawn_app;
use serde_json::Value;
use std::collections::BTreeSet;

const PATHS: &[&str] = &[
    "/api/v1/agents",
    "/api/v1/actions",
    "/api/v1/agents/{agent_id}/call",
    "/api/v1/actions/review-request/call",
    "/api/v1/schemas/{mode}/request.json",
    "/api/v1/schemas/{mode}/response.json",
    "/api/v1/schemas/actions/review_request/request.json",
    "/api/v1/schemas/actions/review_request/response.json",
    "/api/v1/openapi.json",
    "/.well-known/x402",
    "/docs/agents",
    "/docs/actions",
    "/skills/grove-x402/SKILL.md",
    "/healthz",
    "/readyz",
    "/api/v1/receipts/{id}",
    "/api/v1/actions/review-request/requests/{id}",
    "/api/v1/actions/review-request/requests/{id}/cancel",
    "/r/{token}",
    "/webhooks/sms/status",
    "/webhooks/sms/inbound",
];

#[tokio::test]
async fn openapi_lists_every_path_and_prices_paid_operations() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let paths = doc["paths"].as_object().expect("paths");
    for p in PATHS {
        assert!(paths.contains_key(*p), "{p} missing");
    }
    // Every listed GET path that has no parameters answers 200.
    for (p, item) in paths {
        if item.get("get").is_some() && !p.contains('{') {
            assert_eq!(app.get(p).await.status(), 200, "{p}");
        }
    }

    let call = &doc["paths"]["/api/v1/agents/{agent_id}/call"]["post"];
    let info = &call["x-payment-info"];
    assert_eq!(info["pricing"]["mode"], "dynamic");
    assert_eq!(info["pricing"]["currency"], "USD");
    assert_eq!(info["pricing"]["default"], "0.18");
    assert_eq!(info["pricing"]["min"], "0.18");
    assert_eq!(info["pricing"]["max"], "0.45");
    assert_eq!(info["prices"]["handle_objections"], "$0.45");
    assert_eq!(info["prices"]["map_automation"], "$0.25");
    assert!(call["responses"]["402"]["headers"]["PAYMENT-REQUIRED"].is_object());
    let action = &doc["paths"]["/api/v1/actions/review-request/call"]["post"];
    assert_eq!(action["x-payment-info"]["pricing"]["amount"], "0.12");
    assert!(action["responses"]["402"]["headers"]["PAYMENT-REQUIRED"].is_object());

    let variants = call["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
        .as_array()
        .expect("oneOf");
    assert_eq!(variants.len(), 16);
    let responses = call["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"]
        .as_array()
        .expect("oneOf");
    assert_eq!(responses.len(), 16);
}

#[tokio::test]
async fn openapi_embeds_the_published_schemas_and_every_ref_resolves() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    let published = app
        .get_json("/api/v1/schemas/rescue_churn/response.json")
        .await;
    assert_eq!(
        doc["components"]["schemas"]["rescue_churn_response"],
        published
    );
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r.strip_prefix('#').expect("local ref");
        assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
    }
}

/// `template` with every `{param}` replaced by a plausible value.
fn filled(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        out.push_str(&rest[..open]);
        out.push_str(match &rest[open + 1..close] {
            "id" => "rr_0000000000000000",
            "mode" => "diagnose_growth",
            "agent_id" => "mary",
            _ => "x",
        });
        rest = rest.get(close + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn the_router_serves_exactly_the_documented_paths_and_methods() {
    let app = spawn_app().await;
    let doc = app.get_json("/api/v1/openapi.json").await;
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 20, "{} paths", paths.len());
    for (template, item) in paths {
        let documented: BTreeSet<String> = item
            .as_object()
            .expect("path item")
            .keys()
            .map(|m| m.to_uppercase())
            .collect();
        // A method no operation uses: the router answers 405 for a path it has, naming the
        // methods it really routes there, and 404 for a path it does not have.
        let path = filled(template);
        let r = app
            .client
            .request(reqwest::Method::DELETE, app.url(&path))
            .send()
            .await
            .expect("request");
        assert_eq!(
            r.status(),
            405,
            "{template} ({path}) is documented but not routed"
        );
        let allow: BTreeSet<String> = r
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect();
        // A GET route also answers HEAD.
        let mut expected = documented.clone();
        if documented.contains("GET") {
            expected.insert("HEAD".to_owned());
        }
        assert_eq!(
            allow, expected,
            "{template}: routed methods differ from the document"
        );
    }
    let r = app
        .client
        .request(reqwest::Method::DELETE, app.url("/api/v1/undocumented"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 404);
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref"
                    && let Some(s) = x.as_str()
                    && s.starts_with('#')
                {
                    out.push(s.to_owned());
                }
                collect_refs(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}
