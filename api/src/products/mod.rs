//! The products on sale, each a `paid::Product`: a coaching call and a review request. A
//! product is built by its route from a validated body, or read back from a stored call when
//! the gate learns of a settlement later (reconciliation, recovery).

mod coaching;
mod review;

pub use coaching::CoachingCall;
pub use review::ReviewPurchase;

use crate::paid::Product;
use grove_common::{db::entities::call, ledger::CallKind};

/// A stored call that no product can be read back from.
#[derive(Debug, thiserror::Error)]
pub enum StoredCallError {
    #[error("the call names no known coach and mode")]
    Labels,
    #[error("the call's stored body does not read back: {0}")]
    Body(#[from] serde_json::Error),
}

/// The product a stored call bought, from its kind, labels and stored body.
pub fn from_call(call: &call::Model) -> Result<Box<dyn Product>, StoredCallError> {
    match call.kind {
        CallKind::Coaching => Ok(Box::new(CoachingCall::stored(call)?)),
        CallKind::ReviewRequest => Ok(Box::new(ReviewPurchase::stored(call)?)),
    }
}
