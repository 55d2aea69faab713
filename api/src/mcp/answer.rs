//! The results a tool call ends in, other than a payment request: an answer, or a refusal in the
//! HTTP API's error body.

use crate::error::ApiError;
use rmcp::model::{CallToolResult, MetaObject};
use serde_json::Value;

/// `_meta` key of a successful paid result (x402 MCP transport).
pub const PAYMENT_RESPONSE: &str = "x402/payment-response";
/// `_meta` key of the payment a client sends with its call.
pub const PAYMENT: &str = "x402/payment";
/// `_meta` key set on a stored answer replayed to a repeat (the HTTP `Idempotent-Replay`).
pub const REPLAY: &str = "grove/idempotent-replay";

/// An answer: `structuredContent` is the envelope (what the HTTP 200 body is), and its JSON text
/// is the first content block.
pub fn answer(envelope: Value, meta: Option<MetaObject>) -> CallToolResult {
    CallToolResult::structured(envelope).with_meta(meta)
}

/// A refusal or a failure, never a payment request: the error body the HTTP API answers, with
/// `retry_after_s` where the HTTP answer carries `Retry-After`. It has no `x402Version` and no
/// `accepts`, so an x402 client does not read it as a price and pay; a receipt, when the money
/// may have moved (settlement pending, still running, failed after payment), says where to look.
pub fn refusal(error: &ApiError) -> CallToolResult {
    let mut body = error.body();
    if let (Some(seconds), Some(inner)) = (error.retry_after_s(), body.get_mut("error")) {
        inner["retry_after_s"] = seconds.into();
    }
    CallToolResult::structured_error(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pending_settlement_is_an_error_with_its_receipt_and_no_price() {
        let pending = ApiError::SettlementPending {
            receipt: json!({"id": "rcpt_1"}),
            retry_after_s: 2,
        };
        let result = refusal(&pending);
        assert_eq!(result.is_error, Some(true));
        let body = result.structured_content.expect("structured");
        assert_eq!(body["error"]["code"], "settlement_pending");
        assert_eq!(body["error"]["receipt"]["id"], "rcpt_1");
        assert_eq!(body["error"]["retry_after_s"], 2);
        assert!(body.get("x402Version").is_none() && body.get("accepts").is_none());
    }
}
