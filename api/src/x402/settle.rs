//! The three outcomes of moving money (issue 7): it happened, it did not and will not happen, or we
//! do not know. Every settler (an x402 facilitator over HTTP, our own settlement on chain, the
//! development default) answers with a `SettleOutcome`; the paid flow never sees transport errors.
//!
//! "Unknown" is never a refusal: a timeout, a 5xx or a `settlement_pending` can hide a transfer that
//! landed, so an unknown payment is reconciled (`paid::reconcile`), never released by guessing.

use super::facilitator::{Facilitator, FacilitatorError, SettleRequest, SettleResponse};
use alloy_primitives::{Address, B256};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettleOutcome {
    /// The transfer happened. `transaction` is its hash; empty only for the development default,
    /// which moves no money (`local == true`).
    Settled { transaction: String, local: bool },
    /// A definite answer that the transfer did not and will not happen.
    Refused { reason: String },
    /// It may or may not have happened.
    Unknown { reason: String },
}

impl SettleOutcome {
    /// The metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Settled { local: true, .. } => "unsettled",
            Self::Settled { .. } => "settled",
            Self::Refused { .. } => "refused",
            Self::Unknown { .. } => "unknown",
        }
    }
}

/// Reads a payment's authorization on chain: whether USDC's `authorizationState(from, nonce)` is
/// set. `Err` is "could not tell" (an unknown of its own).
#[async_trait]
pub trait AuthorizationReader: Send + Sync {
    async fn authorization_used(&self, authorizer: Address, nonce: B256) -> Result<bool, String>;
}

/// Anything that settles a verified payment.
#[async_trait]
pub trait Settler: Send + Sync {
    async fn settle(&self, request: &SettleRequest) -> SettleOutcome;
    /// Whether this settler moves no money (development): the payment is recorded `unsettled`.
    fn is_local(&self) -> bool {
        false
    }
}

/// Reason codes (facilitators' vocabularies, section 2.3 of the x402 notes) that say the
/// authorization's nonce was already used on chain: on a re-post of our own payload, that means
/// our earlier attempt moved the money.
pub fn means_nonce_used(reason: &str) -> bool {
    let r = reason.to_ascii_lowercase();
    r.contains("nonce") && (r.contains("used") || r.contains("already"))
        || r.contains("authorization is used")
        || r.contains("duplicate_settlement")
        || r.contains("authorization_used")
        || r.contains("already_settled")
}

/// Reasons that are answers but not final ones: the facilitator may have submitted the transfer
/// and not seen its receipt.
fn means_pending(reason: &str) -> bool {
    let r = reason.to_ascii_lowercase();
    r.contains("pending")
        || r.contains("timeout")
        || r.contains("timed_out")
        // An exception inside the facilitator's settle may come after the broadcast.
        || r.starts_with("unexpected_")
}

/// What a payer and network the settle answer must agree with.
pub struct Expect<'a> {
    pub network: &'a str,
    pub payer: Address,
}

/// Classifies a facilitator's answer. A success must name a transaction, our network and our payer;
/// a success that does not is not proof of anything, so it is unknown rather than settled.
pub fn classify(
    answer: Result<SettleResponse, FacilitatorError>,
    expect: &Expect<'_>,
) -> SettleOutcome {
    match answer {
        Err(e) => SettleOutcome::Unknown {
            reason: e.reason().to_owned(),
        },
        Ok(r) if r.success => {
            if !is_tx_hash(&r.transaction) {
                return SettleOutcome::Unknown {
                    reason: "settled_without_transaction".into(),
                };
            }
            if !r.network.is_empty() && r.network != expect.network {
                return SettleOutcome::Unknown {
                    reason: "settled_on_another_network".into(),
                };
            }
            let payer_ok = r.payer.as_deref().is_none_or(|p| {
                p.is_empty() || p.parse::<Address>().is_ok_and(|a| a == expect.payer)
            });
            if !payer_ok {
                return SettleOutcome::Unknown {
                    reason: "settled_for_another_payer".into(),
                };
            }
            SettleOutcome::Settled {
                transaction: r.transaction,
                local: false,
            }
        }
        Ok(r) => {
            let reason = r
                .error_reason
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "settlement_refused".into());
            if means_pending(&reason) {
                SettleOutcome::Unknown { reason }
            } else {
                SettleOutcome::Refused { reason }
            }
        }
    }
}

fn is_tx_hash(s: &str) -> bool {
    s.len() == 66 && s.starts_with("0x") && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// An x402 facilitator as a settler (`local`: the development default, which moves nothing).
pub struct ViaFacilitator {
    pub facilitator: Arc<dyn Facilitator>,
    pub local: bool,
}

#[async_trait]
impl Settler for ViaFacilitator {
    async fn settle(&self, request: &SettleRequest) -> SettleOutcome {
        let answer = self.facilitator.settle(request).await;
        if self.local {
            return match answer {
                Ok(r) if r.success => SettleOutcome::Settled {
                    transaction: String::new(),
                    local: true,
                },
                other => classify(other, &expect_of(request)),
            };
        }
        classify(answer, &expect_of(request))
    }
    fn is_local(&self) -> bool {
        self.local
    }
}

fn expect_of(request: &SettleRequest) -> Expect<'static> {
    let network = if request.x402_version == 1 {
        grove_common::x402::NETWORK_V1
    } else {
        grove_common::x402::NETWORK_V2
    };
    let payer = request
        .payment_payload
        .pointer("/payload/authorization/from")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(Address::ZERO);
    Expect { network, payer }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYER: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
    const TX: &str = "0x00000000000000000000000000000000000000000000000000000000000000ab";

    fn expect() -> Expect<'static> {
        Expect {
            network: "eip155:8453",
            payer: PAYER.parse().expect("address"),
        }
    }

    fn success(tx: &str, network: &str, payer: Option<&str>) -> SettleResponse {
        SettleResponse {
            success: true,
            error_reason: None,
            transaction: tx.into(),
            network: network.into(),
            payer: payer.map(str::to_owned),
        }
    }

    fn unknown(answer: Result<SettleResponse, FacilitatorError>) -> bool {
        matches!(classify(answer, &expect()), SettleOutcome::Unknown { .. })
    }

    #[test]
    fn a_success_is_settled_only_with_a_transaction_our_network_and_our_payer() {
        assert_eq!(
            classify(Ok(success(TX, "eip155:8453", Some(PAYER))), &expect()),
            SettleOutcome::Settled {
                transaction: TX.into(),
                local: false
            }
        );
        assert!(unknown(Ok(success("", "eip155:8453", Some(PAYER)))));
        assert!(unknown(Ok(success("0xabc", "eip155:8453", Some(PAYER)))));
        assert!(unknown(Ok(success(TX, "eip155:84532", Some(PAYER)))));
        assert!(unknown(Ok(success(
            TX,
            "eip155:8453",
            Some("0x0000000000000000000000000000000000000001")
        ))));
    }

    #[test]
    fn errors_and_pending_are_unknown_and_definite_refusals_are_refused() {
        for e in [
            FacilitatorError::Timeout,
            FacilitatorError::Transport("reset".into()),
            FacilitatorError::Status {
                status: 502,
                body_excerpt: String::new(),
            },
            FacilitatorError::Decode("html".into()),
        ] {
            assert!(unknown(Err(e)));
        }
        let refusal = |reason: &str| SettleResponse {
            success: false,
            error_reason: Some(reason.into()),
            transaction: String::new(),
            network: String::new(),
            payer: None,
        };
        assert!(unknown(Ok(refusal("settlement_pending"))));
        assert!(unknown(Ok(refusal("unexpected_settle_error"))));
        assert_eq!(
            classify(Ok(refusal("insufficient_funds")), &expect()),
            SettleOutcome::Refused {
                reason: "insufficient_funds".into()
            }
        );
    }

    #[test]
    fn used_nonce_reasons_of_every_facilitator_are_recognised() {
        for reason in [
            "invalid_exact_evm_nonce_already_used",
            "FiatTokenV2: authorization is used or canceled",
            "authorization_used",
            "duplicate_settlement",
        ] {
            assert!(means_nonce_used(reason), "{reason}");
        }
        for reason in ["insufficient_funds", "invalid_exact_evm_signature"] {
            assert!(!means_nonce_used(reason), "{reason}");
        }
    }
}
