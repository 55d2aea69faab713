//! Settling through an x402 facilitator: its answer classified into the three outcomes. A
//! success must name a transaction, our network and our payer; anything less is unknown, and a
//! pending answer is unknown too (the transfer may have been broadcast).

use super::{FACILITATOR_UNAUTHORIZED, SentTransaction, SettleOutcome, Settler};
use crate::x402::facilitator::{Facilitator, FacilitatorError, SettleRequest, SettleResponse};
use alloy_primitives::Address;
use async_trait::async_trait;
use grove_common::config::Network;
use serde_json::Value;
use std::sync::Arc;

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
/// a success that does not is not proof of anything, so it is unknown rather than settled (and its
/// transaction, if it names one, is followed by reconciliation).
pub fn classify(
    answer: Result<SettleResponse, FacilitatorError>,
    expect: &Expect<'_>,
) -> SettleOutcome {
    let r = match answer {
        // Refused our credentials before processing anything.
        Err(FacilitatorError::Unauthorized { .. }) => {
            return SettleOutcome::Refused {
                reason: FACILITATOR_UNAUTHORIZED.into(),
            };
        }
        Err(e) => return SettleOutcome::unknown(e.reason()),
        Ok(r) => r,
    };
    let sent = is_tx_hash(&r.transaction).then(|| SentTransaction {
        hash: r.transaction.clone(),
        raw: None,
    });
    let unknown = |reason: &str| SettleOutcome::Unknown {
        reason: reason.into(),
        sent: sent.clone(),
    };
    if !r.success {
        let reason = r
            .error_reason
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "settlement_refused".into());
        return if means_pending(&reason) {
            unknown(&reason)
        } else {
            SettleOutcome::Refused { reason }
        };
    }
    if sent.is_none() {
        return unknown("settled_without_transaction");
    }
    if r.network.is_empty() {
        return unknown("settled_without_network");
    }
    if r.network != expect.network {
        return unknown("settled_on_another_network");
    }
    match r.payer.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        None => return unknown("settled_without_payer"),
        Some(p) if p.parse::<Address>().ok() != Some(expect.payer) => {
            return unknown("settled_for_another_payer");
        }
        Some(_) => {}
    }
    SettleOutcome::Settled {
        transaction: r.transaction,
        local: false,
    }
}

fn is_tx_hash(s: &str) -> bool {
    s.len() == 66 && s.starts_with("0x") && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// An x402 facilitator as a settler (`local`: the development default, which moves nothing).
pub struct ViaFacilitator {
    pub facilitator: Arc<dyn Facilitator>,
    pub local: bool,
    /// The configured network: a settlement on any other is not ours.
    pub network: Network,
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
                other => classify(other, &expect_of(request, self.network)),
            };
        }
        classify(answer, &expect_of(request, self.network))
    }
    fn is_local(&self) -> bool {
        self.local
    }
}

fn expect_of(request: &SettleRequest, network: Network) -> Expect<'static> {
    let network = if request.x402_version == 1 {
        network.v1_name()
    } else {
        network.caip2()
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
    fn a_success_we_cannot_attribute_is_unknown_and_its_transaction_is_followed() {
        let followed = Some(SentTransaction {
            hash: TX.into(),
            raw: None,
        });
        for (answer, reason) in [
            (success(TX, "", Some(PAYER)), "settled_without_network"),
            (success(TX, "eip155:8453", None), "settled_without_payer"),
            (
                success(TX, "eip155:8453", Some("")),
                "settled_without_payer",
            ),
            (
                success(TX, "eip155:8453", Some("not an address")),
                "settled_for_another_payer",
            ),
        ] {
            assert_eq!(
                classify(Ok(answer), &expect()),
                SettleOutcome::Unknown {
                    reason: reason.into(),
                    sent: followed.clone(),
                }
            );
        }
    }

    #[test]
    fn refused_credentials_are_a_definite_not_processed_that_is_the_operators_fault() {
        for status in [401, 403] {
            let outcome = classify(Err(FacilitatorError::Unauthorized { status }), &expect());
            assert_eq!(
                outcome,
                SettleOutcome::Refused {
                    reason: FACILITATOR_UNAUTHORIZED.into()
                }
            );
            assert!(outcome.is_operator_fault());
        }
        let payer_fault = SettleOutcome::Refused {
            reason: "insufficient_funds".into(),
        };
        assert!(!payer_fault.is_operator_fault());
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
        // A pending answer that names its transaction hands it to reconciliation.
        let mut pending = refusal("settlement_pending");
        pending.transaction = TX.into();
        assert_eq!(
            classify(Ok(pending), &expect()),
            SettleOutcome::Unknown {
                reason: "settlement_pending".into(),
                sent: Some(SentTransaction {
                    hash: TX.into(),
                    raw: None
                }),
            }
        );
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
