//! Turning a paid call's outcome into the HTTP answer.

use super::{internal, ledger, wait::Outcome};
use crate::{error::ApiError, state::AppState, x402::payment::VerifiedPayment};
use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::{
    db::calls,
    receipt,
    x402::{NETWORK_V1, NETWORK_V2, headers},
};
use serde_json::json;
use uuid::Uuid;

pub enum Answer {
    /// Work done for this request (first time, or a free re-run).
    Fresh(Uuid),
    /// A stored result answering a repeat.
    Replay(Uuid),
    Failed(Uuid, String),
    /// The originating request's deadline passed.
    StillRunning(Uuid),
    /// A repeat whose original is still running past the deadline.
    InProgress,
    /// The settlement was refused: the 402 code to answer with (the challenge is the caller's).
    Unpaid(String),
    /// The settlement's outcome is still unknown at the deadline: not a 402, the receipt to poll.
    SettlementPending(Uuid),
}

/// Seconds a 409 or 504 asks the client to wait before retrying.
const RETRY_AFTER_S: u64 = 2;

impl Answer {
    pub fn from_wait(call_id: Uuid, outcome: Outcome, repeat: bool) -> Self {
        match (outcome, repeat) {
            (Outcome::Completed, false) => Answer::Fresh(call_id),
            (Outcome::Completed, true) => Answer::Replay(call_id),
            (Outcome::Failed(why), _) => Answer::Failed(call_id, why),
            (Outcome::Unpaid(code), _) => Answer::Unpaid(code),
            (Outcome::SettlementPending, _) => Answer::SettlementPending(call_id),
            (Outcome::TimedOut, false) => Answer::StillRunning(call_id),
            (Outcome::TimedOut, true) => Answer::InProgress,
        }
    }
}

pub async fn render(
    state: &AppState,
    payment: &VerifiedPayment,
    answer: Answer,
) -> Result<Response, ApiError> {
    let (call_id, replay) = match answer {
        Answer::Fresh(id) => (id, false),
        Answer::Replay(id) => (id, true),
        Answer::Failed(id, why) => {
            let call = calls::load(&state.db, id).await.map_err(internal)?;
            state.metrics.call_outcome(
                call.as_ref().and_then(|c| c.mode.as_deref()),
                "upstream_failed",
            );
            tracing::warn!(call_id = %id, reason = %why, "paid call failed after settlement");
            let receipt = call
                .map(|c| receipt::json(&c.receipt_id, c.created_at))
                .unwrap_or_default();
            return Err(ApiError::UpstreamFailed { receipt });
        }
        Answer::StillRunning(id) => {
            let call = calls::load(&state.db, id).await.map_err(internal)?;
            state.metrics.call_outcome(
                call.as_ref().and_then(|c| c.mode.as_deref()),
                "still_running",
            );
            let receipt = call
                .map(|c| receipt::json(&c.receipt_id, c.created_at))
                .unwrap_or_default();
            return Err(ApiError::StillRunning {
                receipt,
                retry_after_s: RETRY_AFTER_S,
            });
        }
        Answer::SettlementPending(id) => {
            let call = calls::load(&state.db, id).await.map_err(internal)?;
            state.metrics.call_outcome(
                call.as_ref().and_then(|c| c.mode.as_deref()),
                "settlement_pending",
            );
            let receipt = call
                .map(|c| receipt::json(&c.receipt_id, c.created_at))
                .unwrap_or_default();
            return Err(ApiError::SettlementPending {
                receipt,
                retry_after_s: RETRY_AFTER_S,
            });
        }
        Answer::Unpaid(code) => {
            // `serve` answers these with its own challenge before rendering.
            return Err(internal(format!(
                "unpaid call rendered as a result: {code}"
            )));
        }
        Answer::InProgress => {
            return Err(ApiError::RequestInProgress {
                retry_after_s: RETRY_AFTER_S,
            });
        }
    };
    let result = calls::load_result(&state.db, call_id)
        .await
        .map_err(internal)?
        .ok_or_else(|| internal("completed call has no result"))?;
    let settlement = ledger::payment_for(&state.db, call_id)
        .await
        .map_err(internal)?;
    let mode = result
        .body
        .get("mode")
        .and_then(|m| m.as_str())
        .map(str::to_owned);
    state.metrics.call_outcome(
        mode.as_deref(),
        if replay { "replayed" } else { "completed" },
    );

    let mut response = (StatusCode::OK, axum::Json(result.body)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let (name, network) = if payment.version == 1 {
        (headers::X_PAYMENT_RESPONSE, NETWORK_V1)
    } else {
        (headers::PAYMENT_RESPONSE, NETWORK_V2)
    };
    let settle = json!({
        "success": true,
        "transaction": settlement.and_then(|p| p.transaction).unwrap_or_default(),
        "network": network,
        "payer": format!("{:#x}", payment.payer),
    });
    if let Ok(v) = HeaderValue::from_str(&STANDARD.encode(settle.to_string())) {
        h.insert(name, v);
    }
    if replay {
        h.insert("idempotent-replay", HeaderValue::from_static("true"));
    }
    Ok(response)
}
