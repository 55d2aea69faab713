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

/// An error response that may tell the client when to come back.
fn error_with_retry_after(description: &str) -> Value {
    let mut response = error_response(description);
    response["headers"] = retry_after();
    response
}

fn retry_after() -> Value {
    json!({"Retry-After": {
        "description": "Seconds to wait before retrying, when waiting can help (request_in_progress, rate_limited, not ready, settlement_pending).",
        "schema": {"type": "integer", "minimum": 0},
    }})
}

/// Every free operation documents its client errors: the specific ones it gives, and the
/// standard error body for any other 4xx.
fn free_errors(specific: &[(&str, &str)]) -> Value {
    let mut responses = Map::new();
    for (status, description) in specific {
        responses.insert((*status).into(), error_response(description));
    }
    responses.insert(
        "4XX".into(),
        error_response("Any other client error (for example 405 method_not_allowed, with the route's Allow header): the standard error body."),
    );
    Value::Object(responses)
}

/// A free operation: its 2xx `responses` merged with its documented 4xx.
fn free_operation(mut op: Value, specific: &[(&str, &str)]) -> Value {
    if let (Some(responses), Value::Object(errors)) = (
        op.get_mut("responses").and_then(Value::as_object_mut),
        free_errors(specific),
    ) {
        for (status, response) in errors {
            responses.entry(status).or_insert(response);
        }
    }
    op
}

fn get_json(operation_id: &str, summary: &str, tag: &str, schema: Value) -> Value {
    json!({"get": free_operation(json!({
        "operationId": operation_id,
        "summary": summary,
        "tags": [tag],
        "security": [],
        "responses": {"200": {"description": "OK", "content": json_content(schema)}},
    }), &[])})
}

fn get_text(operation_id: &str, summary: &str, tag: &str, media: &str) -> Value {
    json!({"get": free_operation(json!({
        "operationId": operation_id,
        "summary": summary,
        "tags": [tag],
        "security": [],
        "responses": {"200": {"description": "OK", "content": {media: {"schema": {"type": "string"}}}}},
    }), &[])})
}

/// Headers, responses and pricing shared by both paid operations.
fn paid_operation(
    config: &Config,
    operation_id: &str,
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
               "description": "1 or true selects the free sandbox: the body gets exactly the checks of a paid call (same statuses, codes and details), then a schema-valid sample comes back; nothing is charged.",
               "schema": {"type": "string", "enum": ["1", "true"]}}),
        json!({"name": "sandbox", "in": "query", "required": false, "description": "1 or true selects the free sandbox.",
               "schema": {"type": "string", "enum": ["1", "true"]}}),
    ];
    let mut op = json!({
        "operationId": operation_id,
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
            "409": error_with_retry_after("request_in_progress (with Retry-After), or an action refused before payment (recipient_opted_out, cooldown_active)."),
            "413": error_response("Body over 2 MiB."),
            "415": error_response("Content type is not application/json."),
            "422": error_response("validation_failed (every violation with its JSON pointer), consent_invalid, or invalid_request when one body has problems of more than one kind; every detail carries its own code (validation_failed or consent_invalid). Also mode_not_offered, idempotency_key_reused, invalid_idempotency_key."),
            "429": error_with_retry_after("rate_limited, with Retry-After."),
            "502": error_response("upstream_failed after settlement; the body carries the receipt and a retry is free."),
            "503": error_with_retry_after("unavailable or payments_disabled; nothing was charged."),
            "504": error_with_retry_after("still_running or settlement_pending: the deadline passed; the body carries the receipt to poll."),
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
                "code": {"type": "string", "description": "A 422 whose problems are all of one kind keeps that kind's code (validation_failed, consent_invalid); problems of several kinds answer invalid_request."},
                "message": {"type": "string"},
                "details": {"type": "array", "items": {
                    "type": "object", "required": ["path", "message"],
                    "properties": {
                        "path": {"type": "string", "description": "JSON pointer"},
                        "message": {"type": "string"},
                        "code": {"type": "string", "description": "On a 422 that lists problems: this problem's own code (validation_failed or consent_invalid)."},
                    },
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
        "callAgent",
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
        "requestReview",
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
    let schema_get = |operation_id: &str, summary: &str| {
        let mut op = get_json(operation_id, summary, "schemas", json!({"type": "object"}));
        op["get"]["parameters"] = mode_param.clone();
        op["get"]["responses"]["404"] = error_response("unknown_mode");
        op
    };
    let request_schema_op = schema_get(
        "getModeRequestSchema",
        "JSON Schema (2020-12) of a mode's request body",
    );
    let response_schema_op = schema_get(
        "getModeResponseSchema",
        "JSON Schema (2020-12) of a mode's 200 response",
    );
    let readiness = json!({"type": "object", "required": ["status", "checks"], "properties": {
        "status": {"enum": ["ready", "not_ready"]},
        "checks": {"type": "object", "properties": {
            "database": {"enum": ["ok", "unavailable"]},
            "queue": {"enum": ["ok", "unavailable"]},
            "consumers": {"enum": ["ok", "none_alive"], "description": "With separate workers (Redis): whether every queue has a live worker consumer."},
        }},
        "consumers": {"type": "object", "description": "With separate workers (Redis): live worker consumers per queue (a heartbeat within the last 6 s).", "additionalProperties": {"type": "integer", "minimum": 0}},
    }});

    let rr_id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^rr_"}}]);
    let form =
        json!({"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}});
    let paths = json!({
        "/api/v1/agents": get_json("listAgents", "Coaching catalog: coaches, modes, prices, schemas", "catalog", json!({"type": "object"})),
        "/api/v1/actions": get_json("listActions", "Action catalog", "catalog", json!({"type": "object"})),
        "/api/v1/agents/{agent_id}/call": {"post": coaching},
        "/api/v1/actions/review-request/call": {"post": action_op},
        "/api/v1/schemas/{mode}/request.json": request_schema_op,
        "/api/v1/schemas/{mode}/response.json": response_schema_op,
        "/api/v1/schemas/actions/review_request/request.json": get_json("getReviewRequestRequestSchema", "JSON Schema of the review request body", "schemas", json!({"type": "object"})),
        "/api/v1/schemas/actions/review_request/response.json": get_json("getReviewRequestResponseSchema", "JSON Schema of the review request response", "schemas", json!({"type": "object"})),
        "/api/v1/openapi.json": get_json("getOpenApi", "This document", "discovery", json!({"type": "object"})),
        "/.well-known/x402": get_json("getX402Discovery", "x402 discovery: paid resources, ownership proofs, skill", "discovery", json!({"type": "object"})),
        "/docs/agents": get_text("getAgentsGuide", "Guide to the coaching calls (HTML)", "docs", "text/html"),
        "/docs/actions": get_text("getActionsGuide", "Guide to the review request action (HTML)", "docs", "text/html"),
        config.skill_path(): get_text("getSkill", "Skill file an agent client can follow end to end", "docs", "text/markdown"),
        "/api/v1/receipts/{id}": {"get": free_operation(json!({
            "operationId": "getReceipt",
            "summary": "The stored result of a paid call: {id, kind, status, created_at, payer, amount_usd, network, transaction, result}",
            "tags": ["paid"], "security": [],
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK", "content": json_content(json!({"type": "object"}))}},
        }), &[("404", "not_found: no such receipt, or it expired")])},
        "/api/v1/actions/review-request/requests/{id}": {"get": free_operation(json!({
            "operationId": "getReviewRequest",
            "summary": "A tracked review request: state, masked phone, messages with status history, event log, next action",
            "tags": ["actions"], "security": [],
            "parameters": rr_id,
            "responses": {"200": {"description": "OK", "content": json_content(json!({"type": "object"}))}},
        }), &[("404", "not_found")])},
        "/api/v1/actions/review-request/requests/{id}/cancel": {"post": free_operation(json!({
            "operationId": "cancelReviewRequest",
            "summary": "Cancel a review request that has not finished",
            "tags": ["actions"], "security": [],
            "parameters": rr_id,
            "responses": {
                "200": {"description": "The cancelled request", "content": json_content(json!({"type": "object"}))},
                "409": error_with_retry_after("not_cancellable: the request already finished"),
            },
        }), &[("404", "not_found")])},
        "/r/{token}": {"get": free_operation(json!({
            "operationId": "followReviewLink",
            "summary": "Tracked review link: records the click and redirects to the business's review page",
            "tags": ["actions"], "security": [],
            "parameters": [{"name": "token", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"302": {"description": "Redirect to the review URL"}},
        }), &[("404", "not_found")])},
        "/webhooks/sms/status": {"post": free_operation(json!({
            "operationId": "receiveSmsStatus",
            "summary": "Twilio delivery reports (form post, X-Twilio-Signature verified)",
            "tags": ["webhooks"], "security": [],
            "requestBody": form,
            "responses": {"200": {"description": "Accepted (TwiML)"}},
        }), &[("403", "forbidden: signature mismatch")])},
        "/webhooks/sms/inbound": {"post": free_operation(json!({
            "operationId": "receiveSmsInbound",
            "summary": "Twilio inbound messages: STOP/START/HELP and plain-words opt-outs (form post, X-Twilio-Signature verified)",
            "tags": ["webhooks"], "security": [],
            "requestBody": form,
            "responses": {"200": {"description": "Accepted (TwiML)"}},
        }), &[("403", "forbidden: signature mismatch")])},
        "/metrics": get_text("getMetrics", "Prometheus metrics", "operations", "text/plain"),
        "/healthz": get_json("getHealth", "Liveness", "operations", json!({"type": "object"})),
        "/readyz": {"get": free_operation(json!({
            "operationId": "getReadiness",
            "summary": "Readiness (database, queue, and with separate workers, a live consumer on every queue)",
            "tags": ["operations"], "security": [],
            "responses": {
                "200": {"description": "Ready", "content": json_content(readiness.clone())},
                "503": {"description": "Not ready: a check failed; the body says which.", "headers": retry_after(), "content": json_content(readiness)},
            },
        }), &[])},
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
