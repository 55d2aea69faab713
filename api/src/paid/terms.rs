//! The terms of one sale, and the 402s and 503s that refuse it.

use super::product::Product;
use crate::{
    error::ApiError,
    state::AppState,
    x402::challenge::{self, Challenge, Offer, codes},
};
use alloy_primitives::Address;

/// What is offered, to whom: the challenge a refusal answers with. The offer itself (its
/// description, paths and example body) is built when a challenge or the requirements need it,
/// not held: a paid call keeps its terms through the wait on its work, and needs them again
/// only to refuse (issue 31: memory per call in flight).
pub(super) struct Terms<'a> {
    pub state: &'a AppState,
    pub pay_to: Address,
    pub product: &'a dyn Product,
}

impl<'a> Terms<'a> {
    pub fn offer(&self) -> Offer<'a> {
        self.product.offer(&self.state.schemas)
    }

    pub fn challenge(&self, error: &str) -> Challenge {
        let pay_to = self.pay_to.to_checksum(None);
        challenge::build(&self.state.config, &pay_to, &self.offer(), error)
    }

    /// What a payment in `x402_version` settles against (the challenge's one requirement), for
    /// `offer` (this product's, built once by the caller for its price, path and this).
    pub fn requirements(&self, offer: &Offer<'_>, x402_version: u8) -> serde_json::Value {
        let pay_to = self.pay_to.to_checksum(None);
        challenge::requirements(&self.state.config, &pay_to, offer, x402_version)
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
