//! A paid tool call, through the same gate as the HTTP API (x402 MCP transport, v2): the payment
//! comes from `_meta["x402/payment"]`, and the gate verifies it, applies idempotency, reserves the
//! authorization (one authorization pays once), settles, runs the work and stores the receipt
//! exactly as for a `POST`.
//!
//! The idempotency scope is the HTTP one: with `idempotency_key`, that key (24 hours); without,
//! the payer, the tool (its mode and coach fix the path) and the canonical arguments (10 minutes
//! for coaching, 24 hours for a review request). So an identical call with a fresh authorization
//! replays the stored answer and settles nothing.
//!
//! The answers, as the transport spec says:
//! - no payment, or one refused (`payment_invalid:*`, `payment_already_used`,
//!   `settlement_failed:*`): an error result whose `structuredContent` is the v2
//!   `PaymentRequired`, resource `mcp://tool/{name}`; a refused settlement also carries
//!   `x402/payment-response` with `success: false` in it, as the reference server does;
//! - paid: the envelope as `structuredContent`, the settlement in `_meta["x402/payment-response"]`;
//! - anything else (settlement unknown, still running, failed after payment, not on sale): an
//!   error result in the HTTP error body, without `x402Version` or `accepts`, so no x402 client
//!   pays again; the receipt and `retry_after_s` say what to do.
//!
//! This module is the only one that knows how the gate is called.

use super::answer::{self, PAYMENT_RESPONSE, REPLAY, refusal};
use crate::{
    error::ApiError,
    extract::IdempotencyKey,
    paid::{self, Purchase},
    state::AppState,
    x402::challenge::{Challenge, codes},
};
use axum::{
    http::{HeaderMap, HeaderValue, StatusCode},
    response::Response,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::x402::{NETWORK_V2, headers};
use rmcp::model::{CallToolResult, MetaObject};
use serde_json::{Value, json};

/// The envelope of a paid answer is a few KiB; this bounds reading it back.
const MAX_ENVELOPE_BYTES: usize = 1024 * 1024;

/// Buys `purchase` with `payment` (the client's `_meta["x402/payment"]`, if any).
pub async fn buy(
    state: &AppState,
    tool: &str,
    purchase: Purchase<'_>,
    payment: Option<&Value>,
    key: Option<IdempotencyKey>,
) -> CallToolResult {
    // Today's gate reads the payment where the HTTP API carries it: in PAYMENT-SIGNATURE, as
    // base64 JSON. Base64 is ASCII, so the header value is always valid.
    let mut carried = HeaderMap::new();
    if let Some(payment) = payment
        && let Ok(value) = HeaderValue::from_str(&STANDARD.encode(payment.to_string()))
    {
        carried.insert(headers::PAYMENT_SIGNATURE, value);
    }
    match paid::serve(state, &carried, key, purchase).await {
        Ok(response) => paid_answer(response)
            .await
            .unwrap_or_else(|error| refusal(&error)),
        Err(ApiError::PaymentRequired(challenge)) => payment_required(tool, &challenge),
        Err(error) => refusal(&error),
    }
}

/// The x402 `PaymentRequired` of a tool (spec: transports-v2/mcp.md).
pub fn payment_required(tool: &str, challenge: &Challenge) -> CallToolResult {
    let mut required = serde_json::to_value(&challenge.v2).unwrap_or_default();
    if let Some(fields) = required.as_object_mut() {
        // The bazaar extension describes the HTTP call; an MCP client has the tool's schemas.
        fields.remove("extensions");
        if let Some(resource) = fields.get_mut("resource") {
            resource["url"] = json!(format!("mcp://tool/{tool}"));
        }
        if let Some(reason) = challenge.error.strip_prefix(&codes::settlement_failed("")) {
            fields.insert(
                PAYMENT_RESPONSE.into(),
                json!({"success": false, "errorReason": reason, "transaction": "", "network": NETWORK_V2}),
            );
        }
    }
    CallToolResult::structured_error(required)
}

/// A paid 200: the envelope, and the settlement the gate put in `PAYMENT-RESPONSE`.
async fn paid_answer(response: Response) -> Result<CallToolResult, ApiError> {
    let internal = |what: &str| ApiError::Internal(format!("paid MCP answer: {what}"));
    if response.status() != StatusCode::OK {
        return Err(internal("the gate answered a success other than 200"));
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ENVELOPE_BYTES)
        .await
        .map_err(|_| internal("envelope unreadable"))?;
    let envelope: Value =
        serde_json::from_slice(&bytes).map_err(|_| internal("envelope is not JSON"))?;
    let settlement = parts
        .headers
        .get(headers::PAYMENT_RESPONSE)
        .and_then(|v| STANDARD.decode(v.as_bytes()).ok())
        .and_then(|raw| serde_json::from_slice::<Value>(&raw).ok())
        .ok_or_else(|| internal("no settlement on a paid answer"))?;
    let mut meta = MetaObject::default();
    meta.insert(PAYMENT_RESPONSE.into(), settlement);
    if parts.headers.contains_key("idempotent-replay") {
        meta.insert(REPLAY.into(), Value::Bool(true));
    }
    Ok(answer::answer(envelope, Some(meta)))
}
