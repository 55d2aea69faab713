//! OpenAPI 3.1 of every endpoint (CONTRACT 2), derived from the catalog and the published schemas.

use grove_common::{
    catalog::{self, COACHES, MODES, REVIEW_REQUEST},
    config::Config,
    schema::SchemaRegistry,
    x402,
};
use serde_json::{Map, Value, json};

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": json_content(schema_ref("Error"))})
}

fn get_json(summary: &str, tag: &str, schema: Value) -> Value {
    json!({"get": {
        "summary": summary,
        "tags": [tag],
        "security": [],
        "responses": {"200": {"description": "OK", "content": json_content(schema)}},
    }})
}

fn get_text(summary: &str, tag: &str, media: &str) -> Value {
    json!({"get": {
        "summary": summary,
        "tags": [tag],
        "security": [],
        "responses": {"200": {"description": "OK", "content": {media: {"schema": {"type": "string"}}}}},
    }})
}

/// Headers, responses and pricing shared by both paid operations.
fn paid_operation(
    config: &Config,
    summary: &str,
    request: Value,
    response: Value,
    payment_info: Value,
) -> Value {
    let header = |name: &str, description: &str| json!({"name": name, "in": "header", "required": false, "description": description, "schema": {"type": "string"}});
    let mut params = vec![
        header("PAYMENT-SIGNATURE", "x402 v2 payment payload, base64 JSON."),
        header(
            "X-PAYMENT",
            "x402 v1 payment payload, base64 JSON. Omit both to get the 402 requirements.",
        ),
        json!({"name": "Idempotency-Key", "in": "header", "required": false,
               "description": "1-255 printable ASCII. A repeat with the same payer and body replays the stored result for 24 h.",
               "schema": {"type": "string", "minLength": 1, "maxLength": 255}}),
        json!({"name": config.sandbox_header(), "in": "header", "required": false,
               "description": "1 or true selects the free sandbox: a fixed schema-valid sample, nothing charged.",
               "schema": {"type": "string", "enum": ["1", "true"]}}),
        json!({"name": "sandbox", "in": "query", "required": false, "description": "1 or true selects the free sandbox.",
               "schema": {"type": "string", "enum": ["1", "true"]}}),
    ];
    let mut op = json!({
        "summary": summary,
        "tags": ["paid"],
        "requestBody": {"required": true, "content": json_content(request)},
        "responses": {
            "200": {
                "description": "The result. Idempotent-Replay: true marks a stored result replayed without a new charge.",
                "headers": {
                    "PAYMENT-RESPONSE": {"description": "x402 v2 settlement (base64 JSON {success, transaction, network, payer}).", "schema": {"type": "string"}},
                    "X-PAYMENT-RESPONSE": {"description": "x402 v1 settlement, when paid with X-PAYMENT.", "schema": {"type": "string"}},
                    "Idempotent-Replay": {"description": "true on a replayed stored result.", "schema": {"type": "string"}},
                },
                "content": json_content(response),
            },
            "400": error_response("Body is not JSON (invalid_json)."),
            "402": {
                "description": "Payment required, invalid, already used, or settlement failed. The requirements are in the PAYMENT-REQUIRED header (x402 v2) and the body (x402 v1).",
                "headers": {"PAYMENT-REQUIRED": {"required": true, "description": "Base64 of the x402 v2 PaymentRequired JSON.", "schema": {"type": "string"}}},
                "content": json_content(schema_ref("PaymentRequirementsResponse")),
            },
            "404": error_response("Unknown agent or action."),
            "409": error_response("request_in_progress (with Retry-After), or an action refused before payment."),
            "413": error_response("Body over 2 MiB."),
            "415": error_response("Content type is not application/json."),
            "422": error_response("validation_failed (every violation with its JSON pointer), mode_not_offered, idempotency_key_reused, invalid_idempotency_key, or an action refused before payment."),
            "429": error_response("rate_limited, with Retry-After."),
            "502": error_response("upstream_failed after settlement; the body carries the receipt and a retry is free."),
            "503": error_response("unavailable or payments_disabled; nothing was charged."),
            "504": error_response("still_running: the deadline passed; the body carries the receipt to poll."),
        },
        "x-payment-info": payment_info,
    });
    if let Some(obj) = op.as_object_mut() {
        obj.insert(
            "parameters".into(),
            Value::Array(std::mem::take(&mut params)),
        );
    }
    op
}

pub fn document(config: &Config, schemas: &SchemaRegistry) -> Value {
    let mut components = Map::new();
    let mut request_refs = Vec::new();
    let mut response_refs = Vec::new();
    let mut mapping = Map::new();
    let mut prices = Map::new();
    for m in MODES.iter() {
        let Some(pair) = schemas.mode(m.id) else {
            continue;
        };
        components.insert(format!("{}_request", m.id), pair.request.json().clone());
        components.insert(format!("{}_response", m.id), pair.response.json().clone());
        request_refs.push(schema_ref(&format!("{}_request", m.id)));
        response_refs.push(schema_ref(&format!("{}_response", m.id)));
        mapping.insert(
            m.id.into(),
            json!(format!("#/components/schemas/{}_request", m.id)),
        );
        prices.insert(m.id.into(), json!(m.price().to_string()));
    }
    let action = schemas.action();
    components.insert(
        "review_request_request".into(),
        action.request.json().clone(),
    );
    components.insert(
        "review_request_response".into(),
        action.response.json().clone(),
    );
    components.insert("Error".into(), json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["code", "message", "details", "request_id"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "array", "items": {
                    "type": "object", "required": ["path", "message"],
                    "properties": {"path": {"type": "string", "description": "JSON pointer"}, "message": {"type": "string"}},
                }},
                "request_id": {"type": "string"},
                "receipt": {"type": "object", "description": "On 502 and 504: the receipt of the paid call."},
            },
        }},
    }));
    components.insert("PaymentRequirementsResponse".into(), json!({
        "type": "object",
        "description": "x402 v1 PaymentRequirementsResponse.",
        "required": ["x402Version", "error", "accepts"],
        "properties": {
            "x402Version": {"const": 1},
            "error": {"type": "string", "description": "payment_required, payment_invalid:<reason>, payment_already_used or settlement_failed:<reason>"},
            "accepts": {"type": "array", "items": {"type": "object"}},
        },
    }));

    let (min, max) = catalog::coaching_price_range();
    let coaching_pricing = json!({
        "protocols": ["x402"],
        "network": x402::NETWORK_V2,
        "asset": x402::USDC_ADDRESS,
        "pricing": {"mode": "dynamic", "currency": "USD", "default": min.decimal_usd(), "min": min.decimal_usd(), "max": max.decimal_usd(), "by": "mode"},
        "prices": prices,
    });
    let mut coaching = paid_operation(
        config,
        "Call a coach in one of its modes",
        json!({"oneOf": request_refs, "discriminator": {"propertyName": "mode", "mapping": mapping}}),
        json!({"oneOf": response_refs}),
        coaching_pricing,
    );
    if let Some(params) = coaching.get_mut("parameters").and_then(Value::as_array_mut) {
        params.insert(0, json!({"name": "agent_id", "in": "path", "required": true,
            "schema": {"type": "string", "enum": COACHES.iter().map(|c| c.id).collect::<Vec<_>>()}}));
    }
    let action_op = paid_operation(
        config,
        REVIEW_REQUEST.summary,
        schema_ref("review_request_request"),
        schema_ref("review_request_response"),
        json!({
            "protocols": ["x402"],
            "network": x402::NETWORK_V2,
            "asset": x402::USDC_ADDRESS,
            "pricing": {"mode": "fixed", "currency": "USD", "amount": REVIEW_REQUEST.price.decimal_usd()},
        }),
    );

    let mode_param = json!([{"name": "mode", "in": "path", "required": true,
        "schema": {"type": "string", "enum": MODES.iter().map(|m| m.id).collect::<Vec<_>>()}}]);
    let schema_get = |summary: &str| {
        let mut op = get_json(summary, "schemas", json!({"type": "object"}));
        op["get"]["parameters"] = mode_param.clone();
        op["get"]["responses"]["404"] = error_response("unknown_mode");
        op
    };
    let request_schema_op = schema_get("JSON Schema (2020-12) of a mode's request body");
    let response_schema_op = schema_get("JSON Schema (2020-12) of a mode's 200 response");

    let paths = json!({
        "/api/v1/agents": get_json("Coaching catalog: coaches, modes, prices, schemas", "catalog", json!({"type": "object"})),
        "/api/v1/actions": get_json("Action catalog", "catalog", json!({"type": "object"})),
        "/api/v1/agents/{agent_id}/call": {"post": coaching},
        "/api/v1/actions/review-request/call": {"post": action_op},
        "/api/v1/schemas/{mode}/request.json": request_schema_op,
        "/api/v1/schemas/{mode}/response.json": response_schema_op,
        "/api/v1/schemas/actions/review_request/request.json": get_json("JSON Schema of the review request body", "schemas", json!({"type": "object"})),
        "/api/v1/schemas/actions/review_request/response.json": get_json("JSON Schema of the review request response", "schemas", json!({"type": "object"})),
        "/api/v1/openapi.json": get_json("This document", "discovery", json!({"type": "object"})),
        "/.well-known/x402": get_json("x402 discovery: paid resources, ownership proofs, skill", "discovery", json!({"type": "object"})),
        "/docs/agents": get_text("Guide to the coaching calls (HTML)", "docs", "text/html"),
        "/docs/actions": get_text("Guide to the review request action (HTML)", "docs", "text/html"),
        config.skill_path(): get_text("Skill file an agent client can follow end to end", "docs", "text/markdown"),
        "/api/v1/receipts/{id}": {"get": {
            "summary": "The stored result of a paid call: {id, kind, status, created_at, payer, amount_usd, network, transaction, result}",
            "tags": ["paid"], "security": [],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK", "content": json_content(json!({"type": "object"}))}, "404": error_response("not_found")},
        }},
        "/api/v1/actions/review-request/requests/{id}": {"get": {
            "summary": "A tracked review request: state, masked phone, messages with status history, event log, next action",
            "tags": ["actions"], "security": [],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^rr_"}}],
            "responses": {"200": {"description": "OK", "content": json_content(json!({"type": "object"}))}, "404": error_response("not_found")},
        }},
        "/api/v1/actions/review-request/requests/{id}/cancel": {"post": {
            "summary": "Cancel a review request that has not finished",
            "tags": ["actions"], "security": [],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^rr_"}}],
            "responses": {"200": {"description": "The cancelled request", "content": json_content(json!({"type": "object"}))}, "404": error_response("not_found"), "409": error_response("not_cancellable: already finished")},
        }},
        "/r/{token}": {"get": {
            "summary": "Tracked review link: records the click and redirects to the business's review page",
            "tags": ["actions"], "security": [],
            "parameters": [{"name": "token", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"302": {"description": "Redirect to the review URL"}, "404": error_response("not_found")},
        }},
        "/webhooks/sms/status": {"post": {
            "summary": "Twilio delivery reports (form post, X-Twilio-Signature verified)",
            "tags": ["webhooks"], "security": [],
            "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}},
            "responses": {"200": {"description": "Accepted (TwiML)"}, "403": error_response("signature mismatch")},
        }},
        "/webhooks/sms/inbound": {"post": {
            "summary": "Twilio inbound messages: STOP/START/HELP (form post, X-Twilio-Signature verified)",
            "tags": ["webhooks"], "security": [],
            "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}},
            "responses": {"200": {"description": "Accepted (TwiML)"}, "403": error_response("signature mismatch")},
        }},
        "/metrics": get_text("Prometheus metrics", "operations", "text/plain"),
        "/healthz": get_json("Liveness", "operations", json!({"type": "object"})),
        "/readyz": get_json("Readiness (database, queue)", "operations", json!({"type": "object"})),
    });

    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": format!("{} growth coaching and paid actions", config.service_name),
            "version": "1.0.0",
            "description": super::catalog::DESCRIPTION,
        },
        "servers": [{"url": config.public_base_url}],
        "security": [],
        "x-discovery": {"ownershipProofs": config.pay_to.iter().map(|a| a.to_checksum(None)).collect::<Vec<_>>()},
        "paths": paths,
        "components": {"schemas": components},
    })
}
