//! OpenAPI 3.1 of every endpoint (CONTRACT 2), derived from the catalog and the published schemas.

mod parts;

use crate::routes::table::{Access, OPERATIONS, Op, Operation};
use grove_common::{config::Config, schema::SchemaRegistry};
use parts::{
    coaching_call, components, error_response, error_with_retry_after, free_operation, get_json,
    get_text, json_content, mode_schema_get, readiness, review_request_call,
};
use serde_json::{Map, Value, json};

/// Parameters, body and responses of one operation (its identity comes from the table).
fn operation_body(op: Op, config: &Config) -> Value {
    let object = || json!({"type": "object"});
    let rr_id = || json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^rr_"}}]);
    let form = || json!({"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}});
    let ok_object = || json!({"200": {"description": "OK", "content": json_content(object())}});
    match op {
        Op::ListAgents
        | Op::ListActions
        | Op::GetReviewRequestRequestSchema
        | Op::GetReviewRequestResponseSchema
        | Op::GetOpenApi
        | Op::GetX402Discovery
        | Op::GetHealth => get_json(object()),
        Op::GetAgentsGuide | Op::GetActionsGuide => get_text("text/html"),
        Op::GetSkill => get_text("text/markdown"),
        Op::CallAgent => coaching_call(config),
        Op::RequestReview => review_request_call(config),
        Op::GetModeRequestSchema | Op::GetModeResponseSchema => mode_schema_get(),
        Op::GetReceipt => free_operation(
            json!({
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": ok_object(),
            }),
            &[("404", "not_found: no such receipt, or it expired")],
        ),
        Op::GetReviewRequest => free_operation(
            json!({
                "parameters": rr_id(),
                "responses": ok_object(),
            }),
            &[("404", "not_found")],
        ),
        Op::CancelReviewRequest => free_operation(
            json!({
                "parameters": rr_id(),
                "responses": {
                    "200": {"description": "The cancelled request", "content": json_content(object())},
                    "409": error_response("not_cancellable: the request already finished"),
                },
            }),
            &[("404", "not_found")],
        ),
        Op::FollowReviewLink => free_operation(
            json!({
                "parameters": [{"name": "token", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"302": {"description": "Redirect to the review URL"}},
            }),
            &[("404", "not_found")],
        ),
        Op::ReceiveSmsStatus | Op::ReceiveSmsInbound => free_operation(
            json!({
                "requestBody": form(),
                "responses": {"200": {"description": "Accepted (TwiML)"}},
            }),
            &[("403", "forbidden: signature mismatch")],
        ),
        Op::GetReadiness => readiness(),
    }
}

/// One operation of the table as documented: operationId, summary, tags (and, when free, no
/// security) first, then its body.
fn operation(op: &Operation, config: &Config) -> Value {
    let mut body = operation_body(op.op, config);
    if crate::limits::applies_to(&op.path(config))
        && let Some(responses) = body.get_mut("responses").and_then(Value::as_object_mut)
    {
        responses.entry("429").or_insert_with(|| {
            error_with_retry_after(
                "rate_limited: too many requests from this address; wait Retry-After seconds.",
            )
        });
    }
    if let Some(map) = body.as_object_mut() {
        let mut identity = vec![
            ("operationId", json!(op.operation_id)),
            ("summary", json!(op.summary)),
            ("tags", json!([op.tag])),
        ];
        if op.access == Access::Free {
            identity.push(("security", json!([])));
        }
        for (i, (key, value)) in identity.into_iter().enumerate() {
            map.shift_insert(i, key.to_owned(), value);
        }
    }
    body
}

/// Every operation of the table, keyed by its path and method, as the router serves them.
fn paths(config: &Config) -> Value {
    let mut paths = Map::new();
    for op in OPERATIONS.iter() {
        let item = paths
            .entry(op.path(config).into_owned())
            .or_insert_with(|| json!({}));
        item[op.method.openapi_key()] = operation(op, config);
    }
    Value::Object(paths)
}

pub fn document(config: &Config, schemas: &SchemaRegistry) -> Value {
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": format!("{} growth coaching and paid actions", config.service_name),
            "version": "1.0.0",
            "description": super::catalog::description(config.network),
        },
        "servers": [{"url": config.public_base_url}],
        "security": [],
        "x-discovery": {"ownershipProofs": config.pay_to.iter().map(|a| a.to_checksum(None)).collect::<Vec<_>>()},
        "paths": paths(config),
        "components": {"schemas": components(schemas)},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::table::Method;
    use std::collections::BTreeSet;

    #[test]
    fn the_document_lists_exactly_the_operations_the_router_registers() {
        let config = Config::from_map(&Default::default()).expect("config");
        let schemas = SchemaRegistry::load().expect("schemas");
        let doc = document(&config, &schemas);
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("path item") {
                documented.insert((
                    path.clone(),
                    method.clone(),
                    op["operationId"].as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
        let routed: BTreeSet<_> = OPERATIONS
            .iter()
            .map(|o| {
                (
                    o.path(&config).into_owned(),
                    o.method.openapi_key().to_owned(),
                    o.operation_id.to_owned(),
                )
            })
            .collect();
        assert_eq!(documented, routed);
        for o in OPERATIONS.iter() {
            let documented = &doc["paths"][o.path(&config).as_ref()][o.method.openapi_key()];
            assert_eq!(documented["summary"], o.summary, "{}", o.operation_id);
            let paid = documented.get("x-payment-info").is_some();
            assert_eq!(paid, o.access == Access::Paid, "{}", o.operation_id);
            assert_eq!(
                documented.get("security").is_none(),
                paid,
                "{}",
                o.operation_id
            );
            if o.method == Method::Post && !paid {
                assert!(
                    documented["responses"]["4XX"].is_object(),
                    "{}",
                    o.operation_id
                );
            }
        }
    }
}
