//! The pieces of the OpenAPI document: shared responses and parameters, the two paid operations
//! with their pricing, and the components (every published schema, the error body).

use grove_common::{
    catalog::{self, COACHES, MODES, REVIEW_REQUEST},
    config::Config,
    schema::SchemaRegistry,
};
use serde_json::{Map, Value, json};

pub(super) fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(super) fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

pub(super) fn error_response(description: &str) -> Value {
    json!({"description": description, "content": json_content(schema_ref("Error"))})
}

/// An error response that may tell the client when to come back.
pub(super) fn error_with_retry_after(description: &str) -> Value {
    let mut response = error_response(description);
    response["headers"] = retry_after();
    response
}

/// The codes a 422's details carry, as the documents list them.
fn detail_codes() -> String {
    grove_common::review::codes::ALL.join(", ")
}

pub(super) fn retry_after() -> Value {
    json!({"Retry-After": {
        "description": "Seconds to wait before retrying: request_in_progress, settlement_pending, unavailable, payments_disabled, database_unavailable, model_unavailable and sms_unavailable (until the provider's next health probe), over_capacity (until the calls ahead, or the paid calls' writes queued for the database, would leave room), rate_limited, and /readyz when not ready.",
        "schema": {"type": "integer", "minimum": 0},
    }})
}

/// Every free operation documents its client errors: the specific ones it gives, and the
/// standard error body for any other 4xx.
pub(super) fn free_errors(specific: &[(&str, &str)]) -> Value {
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
pub(super) fn free_operation(mut op: Value, specific: &[(&str, &str)]) -> Value {
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

/// A free operation answering 200 with JSON of `schema`.
pub(super) fn get_json(schema: Value) -> Value {
    free_operation(
        json!({"responses": {"200": {"description": "OK", "content": json_content(schema)}}}),
        &[],
    )
}

/// A free operation answering 200 with text of `media` type.
pub(super) fn get_text(media: &str) -> Value {
    free_operation(
        json!({"responses": {"200": {"description": "OK", "content": {media: {"schema": {"type": "string"}}}}}}),
        &[],
    )
}

/// Headers, responses and pricing shared by both paid operations.
pub(super) fn paid_operation(
    config: &Config,
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
            "429": error_with_retry_after("rate_limited: too many unpaid requests from this address, or new paid calls from this payer; nothing was reserved or charged, and the same payment stays valid after Retry-After. A paid repeat and a payment retry are never limited."),
            "422": error_response(&format!("validation_failed (every violation with its JSON pointer). On the review request: one problem keeps validation_failed (or consent_invalid for consent), more than one answers invalid_request, and every detail carries its own code ({}). Also mode_not_offered, idempotency_key_reused, invalid_idempotency_key.", detail_codes())),
            "502": error_response("upstream_failed after settlement; the body carries the receipt and a retry is free."),
            "503": error_with_retry_after("unavailable, payments_disabled, settlement_unavailable (our facilitator credentials were refused, or our chain endpoint is down: the identical retry with the same payment works once fixed), database_unavailable (a database restart or failover, over in seconds: the identical retry with the same payment works), or model_unavailable / sms_unavailable (the provider this work needs is down, so it is not priced; Retry-After is the next health probe; a request whose payment is already held is never refused this way), or over_capacity (a coaching call: the calls ahead would not leave it room to finish within the deadline; or any paid call while the paid calls' writes are queued for the database: it is not priced; a request whose payment is already held is never refused this way); nothing was charged."),
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

/// The coaching call: its request and response (one variant per mode, each a component) and its
/// price per mode.
pub(super) fn coaching_call(config: &Config) -> Value {
    let mut request_refs = Vec::new();
    let mut response_refs = Vec::new();
    let mut mapping = Map::new();
    let mut prices = Map::new();
    for m in MODES.iter() {
        request_refs.push(schema_ref(&format!("{}_request", m.id)));
        response_refs.push(schema_ref(&format!("{}_response", m.id)));
        mapping.insert(
            m.id.to_string(),
            json!(format!("#/components/schemas/{}_request", m.id)),
        );
        prices.insert(m.id.to_string(), json!(m.price().to_string()));
    }
    let (min, max) = catalog::coaching_price_range();
    let pricing = json!({
        "protocols": ["x402"],
        "network": config.network.caip2(),
        "asset": config.network.usdc_address(),
        "pricing": {"mode": "dynamic", "currency": "USD", "default": min.decimal_usd(), "min": min.decimal_usd(), "max": max.decimal_usd(), "by": "mode"},
        "prices": prices,
    });
    let mut op = paid_operation(
        config,
        json!({"oneOf": request_refs, "discriminator": {"propertyName": "mode", "mapping": mapping}}),
        json!({"oneOf": response_refs}),
        pricing,
    );
    if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
        params.insert(0, json!({"name": "agent_id", "in": "path", "required": true,
            "schema": {"type": "string", "enum": COACHES.iter().map(|c| c.id).collect::<Vec<_>>()}}));
    }
    op
}

pub(super) fn review_request_call(config: &Config) -> Value {
    paid_operation(
        config,
        schema_ref("review_request_request"),
        schema_ref("review_request_response"),
        json!({
            "protocols": ["x402"],
            "network": config.network.caip2(),
            "asset": config.network.usdc_address(),
            "pricing": {"mode": "fixed", "currency": "USD", "amount": REVIEW_REQUEST.price.decimal_usd()},
        }),
    )
}

pub(super) fn mode_schema_get() -> Value {
    let mut op = get_json(json!({"type": "object"}));
    op["parameters"] = json!([{"name": "mode", "in": "path", "required": true,
        "schema": {"type": "string", "enum": MODES.iter().map(|m| m.id).collect::<Vec<_>>()}}]);
    op["responses"]["404"] = error_response("unknown_mode");
    op
}

pub(super) fn readiness() -> Value {
    let body = json!({"type": "object", "required": ["status", "checks"], "properties": {
        "status": {"enum": ["ready", "not_ready"]},
        "checks": {"type": "object", "properties": {
            "database": {"enum": ["ok", "unavailable"]},
            "queue": {"enum": ["ok", "unavailable"]},
            "consumers": {"enum": ["ok", "none_alive"], "description": "With separate workers (Redis): whether every queue has a live worker consumer."},
        }},
        "consumers": {"type": "object", "description": "With separate workers (Redis): live worker consumers per queue (a heartbeat within the last 6 s).", "additionalProperties": {"type": "integer", "minimum": 0}},
    }});
    free_operation(
        json!({
            "responses": {
                "200": {"description": "Ready", "content": json_content(body.clone())},
                "503": {"description": "Not ready: a check failed; the body says which.", "headers": retry_after(), "content": json_content(body)},
            },
        }),
        &[],
    )
}

/// Every mode's request and response schema, the action's, and the shared bodies.
pub(super) fn components(schemas: &SchemaRegistry) -> Map<String, Value> {
    let mut components = Map::new();
    for m in MODES.iter() {
        let pair = schemas.mode(m.id);
        components.insert(format!("{}_request", m.id), pair.request.json().clone());
        components.insert(format!("{}_response", m.id), pair.response.json().clone());
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
                "code": {"type": "string", "description": "On the review request, a 422 with one problem keeps validation_failed (consent_invalid for consent); more than one problem answers invalid_request."},
                "message": {"type": "string"},
                "details": {"type": "array", "items": {
                    "type": "object", "required": ["path", "message"],
                    "properties": {
                        "path": {"type": "string", "description": "JSON pointer"},
                        "message": {"type": "string"},
                        "code": {"type": "string", "description": format!("On a 422 that lists problems: this problem's own code, one of {}.", detail_codes())},
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
    components
}
