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
    paid::{Product, ended::Delivery, gate},
    state::AppState,
    x402::{
        challenge::{Challenge, codes},
        payload::PaymentPayload,
    },
};
use rmcp::model::{CallToolResult, MetaObject};
use serde_json::{Value, json};

/// Where an MCP client carries its payment (named in refusals of a malformed one).
const CARRIER: &str = "_meta[\"x402/payment\"]";

/// Buys `product` with `payment` (the client's `_meta["x402/payment"]`, if any).
pub async fn buy(
    state: &AppState,
    tool: &str,
    product: &dyn Product,
    payment: Option<&Value>,
    key: Option<IdempotencyKey>,
) -> CallToolResult {
    let presented = payment
        .map(|p| PaymentPayload::from_json(p.clone(), CARRIER))
        .transpose();
    match gate::purchase(state, presented, key, product).await {
        Ok(delivery) => paid_answer(delivery),
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
                json!({"success": false, "errorReason": reason, "transaction": "", "network": challenge.v2.accepts.first().map(|a| a.network.as_str())}),
            );
        }
    }
    CallToolResult::structured_error(required)
}

/// A paid answer: the result, and the settlement in `_meta["x402/payment-response"]`.
fn paid_answer(delivery: Delivery) -> CallToolResult {
    let mut meta = MetaObject::default();
    match serde_json::to_value(&delivery.settlement) {
        Ok(settlement) => {
            meta.insert(PAYMENT_RESPONSE.into(), settlement);
        }
        Err(e) => return refusal(&ApiError::internal(e)),
    }
    if delivery.replay {
        meta.insert(REPLAY.into(), Value::Bool(true));
    }
    answer::answer(delivery.body, Some(meta))
}
