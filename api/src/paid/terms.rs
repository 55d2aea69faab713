//! The terms of one sale, and the 402s and 503s that refuse it.

use crate::{
    error::ApiError,
    state::AppState,
    x402::challenge::{self, Challenge, Offer, codes},
};

/// What is offered, to whom: the challenge a refusal answers with.
pub(super) struct Terms<'a> {
    pub state: &'a AppState,
    pub pay_to: String,
    pub offer: Offer<'a>,
}

impl Terms<'_> {
    pub fn challenge(&self, error: &str) -> Challenge {
        challenge::build(&self.state.config, &self.pay_to, &self.offer, error)
    }

    /// What a payment in `x402_version` settles against (the challenge's one requirement).
    pub fn requirements(&self, x402_version: u8) -> serde_json::Value {
        challenge::requirements(&self.state.config, &self.pay_to, &self.offer, x402_version)
    }

    pub fn refuse(&self, error: &str) -> ApiError {
        ApiError::PaymentRequired(Box::new(self.challenge(error)))
    }

    /// The answer of an unpaid call: the 402 its settlement was refused with, or a 503 when
    /// nothing was processed through no fault of the payer's.
    pub fn unpaid(&self, code: &str) -> ApiError {
        if code.starts_with(codes::SETTLEMENT_UNAVAILABLE) {
            ApiError::SettlementUnavailable {
                retry_after_s: UNAVAILABLE_RETRY_AFTER_S,
            }
        } else {
            self.refuse(code)
        }
    }
}

/// Seconds a `settlement_unavailable` answer asks the client to wait: an operator must act.
const UNAVAILABLE_RETRY_AFTER_S: u64 = 60;
