//! How a purchase ended, as data: the delivery (the result and the settlement that paid for it)
//! or the error a transport renders.

use super::{ledger, terms::Terms, wait::Outcome};
use crate::{
    error::ApiError,
    state::AppState,
    x402::{facilitator::SettleResponse, payment::VerifiedPayment},
};
use grove_common::{
    db::{
        calls,
        entities::{call, result},
    },
    receipt,
};
use serde_json::Value;

/// A purchase that delivered: the work's result and the settlement that paid for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The result (a coaching envelope, a tracked review request).
    pub body: Value,
    /// A stored result answering a repeat of the request.
    pub replay: bool,
    /// The x402 version the payment came in, which names its carrier's response field
    /// (`PAYMENT-RESPONSE` for 2, `X-PAYMENT-RESPONSE` for 1).
    pub x402_version: u8,
    /// The x402 `SettlementResponse` to return with the result.
    pub settlement: SettleResponse,
}

/// Seconds a 409 or 504 asks the client to wait before retrying.
const RETRY_AFTER_S: u64 = 2;

/// What a purchase's ending reads of its call: which call, and its receipt. The gate holds this
/// through the wait, not the call's row, whose stored request is the caller's whole body again
/// (issue 31: memory per call in flight).
pub(super) struct CallRef {
    pub(super) id: uuid::Uuid,
    receipt_id: String,
    created_at: chrono::DateTime<chrono::Utc>,
}

impl From<call::Model> for CallRef {
    fn from(call: call::Model) -> Self {
        Self {
            id: call.id,
            receipt_id: call.receipt_id,
            created_at: call.created_at,
        }
    }
}

/// How a purchase ended, on the call the gate holds.
pub(super) enum Ended {
    /// Work done: fresh for this request, or a stored result answering a repeat. `transaction`
    /// when this request's own settlement named it.
    Done {
        call: CallRef,
        replay: bool,
        transaction: Option<String>,
        /// The stored result, when the wait already read it.
        result: Option<Box<result::Model>>,
    },
    /// Paid for, and the work failed (the identical retry re-runs it free).
    Failed(CallRef, String),
    /// The deadline passed while the work was queued or running.
    StillRunning(CallRef),
    /// A repeat whose original is still running past the deadline.
    InProgress,
    /// The settlement was refused: the code to answer with.
    Unpaid(String),
    /// The settlement's outcome is still unknown at the deadline: not a 402, the receipt to poll.
    SettlementPending(CallRef),
}

impl Ended {
    pub(super) fn new(
        call: CallRef,
        waited: Outcome,
        repeat: bool,
        transaction: Option<String>,
    ) -> Self {
        match (waited, repeat) {
            (Outcome::Completed(result), replay) => Ended::Done {
                call,
                replay,
                transaction,
                result,
            },
            (Outcome::Failed(why), _) => Ended::Failed(call, why),
            (Outcome::Unpaid(code), _) => Ended::Unpaid(code),
            (Outcome::SettlementPending, _) => Ended::SettlementPending(call),
            (Outcome::TimedOut, false) => Ended::StillRunning(call),
            (Outcome::TimedOut, true) => Ended::InProgress,
        }
    }
}

/// The outcome as the client gets it: the result and its settlement, or the error.
pub(super) async fn deliver(
    state: &AppState,
    terms: &Terms<'_>,
    mode: Option<grove_common::catalog::ModeId>,
    payment: &VerifiedPayment,
    ended: Ended,
) -> Result<Delivery, ApiError> {
    let mode = mode.map(|m| m.as_str());
    let receipt_of = |call: &CallRef| receipt::json(&call.receipt_id, call.created_at);
    let (call, replay, transaction, result) = match ended {
        Ended::Done {
            call,
            replay,
            transaction,
            result,
        } => (call, replay, transaction, result),
        Ended::Failed(call, why) => {
            state.metrics.call_outcome(mode, "upstream_failed");
            tracing::warn!(call_id = %call.id, reason = %why, "paid call failed after settlement");
            let receipt = receipt_of(&call);
            return Err(ApiError::UpstreamFailed { receipt });
        }
        Ended::StillRunning(call) => {
            state.metrics.call_outcome(mode, "still_running");
            let receipt = receipt_of(&call);
            let retry_after_s = RETRY_AFTER_S;
            return Err(ApiError::StillRunning {
                receipt,
                retry_after_s,
            });
        }
        Ended::SettlementPending(call) => {
            state.metrics.call_outcome(mode, "settlement_pending");
            let receipt = receipt_of(&call);
            let retry_after_s = RETRY_AFTER_S;
            return Err(ApiError::SettlementPending {
                receipt,
                retry_after_s,
            });
        }
        Ended::Unpaid(code) => return Err(terms.unpaid(&code)),
        Ended::InProgress => {
            return Err(ApiError::RequestInProgress {
                retry_after_s: RETRY_AFTER_S,
            });
        }
    };
    let result = match result {
        Some(r) => *r,
        None => calls::load_result(&state.db, call.id)
            .await?
            .ok_or_else(|| ApiError::internal("completed call has no result"))?,
    };
    // The transaction reconciliation (or an earlier request) recorded, unless this request's
    // own settlement named it.
    let transaction = match transaction {
        Some(tx) => tx,
        None => ledger::payment_for(&state.db, call.id)
            .await?
            .and_then(|p| p.transaction)
            .unwrap_or_default(),
    };
    state
        .metrics
        .call_outcome(mode, if replay { "replayed" } else { "completed" });
    let network = if payment.version == 1 {
        state.config.network.v1_name()
    } else {
        state.config.network.caip2()
    };
    Ok(Delivery {
        body: result.body,
        replay,
        x402_version: payment.version,
        settlement: SettleResponse {
            success: true,
            error_reason: None,
            transaction,
            network: network.into(),
            payer: Some(format!("{:#x}", payment.payer)),
        },
    })
}
