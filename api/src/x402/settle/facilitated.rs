//! Settling through an x402 facilitator: its answer classified into the three outcomes. A
//! success must name a transaction, our network and our payer; anything less is unknown, and a
//! pending answer is unknown too (the transfer may have been broadcast).
//!
//! "Nonce already used" on a first settle is no refusal by itself: a proxy that retried our POST,
//! or a front-runner that submitted our very authorization, used it by paying us. The chain
//! tells: our `Transfer` for that nonce is a settlement (the result is delivered), a cancellation
//! or another use of the nonce is a refusal, and without a chain it is unknown (reconciled).

use super::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, FACILITATOR_UNAUTHORIZED,
    SentTransaction, SettleOutcome, Settler,
};
use crate::x402::facilitator::{Facilitator, FacilitatorError, SettleRequest, SettleResponse};
use alloy_primitives::{Address, U256};
use async_trait::async_trait;
use grove_common::clock::Clock;
use grove_common::config::Network;
use serde_json::Value;
use std::sync::Arc;

/// How long before the first settle a use of the authorization is looked for on chain: one
/// older than the request would have been refused by local verification's own checks.
const FIRST_SETTLE_LOOKBACK_S: u64 = 600;

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
    /// Reads the chain when the facilitator answers "nonce already used" (`BASE_RPC_URL`).
    pub chain: Option<Arc<dyn AuthorizationReader>>,
    /// Our wall clock, only to judge how fresh the RPC's head is.
    pub clock: Arc<dyn Clock>,
}

#[async_trait]
impl Settler for ViaFacilitator {
    async fn settle(&self, request: &SettleRequest) -> SettleOutcome {
        match self.ask(request).await {
            SettleOutcome::Refused { reason } if means_nonce_used(&reason) => {
                self.nonce_used_on_first_settle(request, reason).await
            }
            other => other,
        }
    }
    /// Reconciliation asks the chain itself about a re-post's "nonce used" (`reconcile::decide`).
    async fn settle_again(
        &self,
        request: &SettleRequest,
        sent: Option<&SentTransaction>,
    ) -> SettleOutcome {
        let _ = sent;
        self.ask(request).await
    }
    fn is_local(&self) -> bool {
        self.local
    }
}

impl ViaFacilitator {
    /// The facilitator's answer to one `/settle`, classified.
    async fn ask(&self, request: &SettleRequest) -> SettleOutcome {
        match self.facilitator.settle(request).await {
            Ok(r) if self.local && r.success => SettleOutcome::Settled {
                transaction: String::new(),
                local: true,
            },
            other => classify(other, &expect_of(request, self.network)),
        }
    }

    /// A first settle answered "nonce already used": settled only if the chain shows our
    /// transfer for that nonce, refused if it shows a cancellation or another use, unknown else.
    async fn nonce_used_on_first_settle(
        &self,
        request: &SettleRequest,
        reason: String,
    ) -> SettleOutcome {
        let Some(chain) = &self.chain else {
            tracing::warn!(%reason, "x402.settle nonce already used on a first settle; no BASE_RPC_URL to tell whose: unknown");
            return SettleOutcome::unknown(format!("{reason} (no chain to tell whose use)"));
        };
        let asked_at = self.clock.wall_unix();
        let Some(query) = query_of(
            request,
            asked_at.saturating_sub(FIRST_SETTLE_LOOKBACK_S),
            asked_at,
        ) else {
            return SettleOutcome::unknown(format!("{reason} (authorization unreadable)"));
        };
        let state = chain.authorization(&query).await;
        tracing::info!(%reason, ?state, "x402.settle nonce already used on a first settle; asked the chain");
        match state {
            Ok(AuthorizationState::Paid { transaction }) => SettleOutcome::Settled {
                transaction,
                local: false,
            },
            Ok(AuthorizationState::Void { reason }) => SettleOutcome::Refused { reason },
            Ok(AuthorizationState::NotFinal { reason }) => SettleOutcome::unknown(reason),
            Ok(AuthorizationState::Unused) => {
                SettleOutcome::unknown(format!("{reason}, but unused on chain"))
            }
            Err(e) => SettleOutcome::unknown(e),
        }
    }
}

/// The chain question of a settle request's authorization.
fn query_of(request: &SettleRequest, since: u64, asked_at: u64) -> Option<AuthorizationQuery> {
    let auth = request.payment_payload.pointer("/payload/authorization")?;
    let text = |k: &str| auth.get(k).and_then(Value::as_str);
    let uint = |k: &str| text(k).and_then(|s| U256::from_str_radix(s, 10).ok());
    Some(AuthorizationQuery {
        authorizer: text("from")?.parse().ok()?,
        nonce: text("nonce")?.parse().ok()?,
        to: text("to")?.parse().ok()?,
        value: uint("value")?,
        since,
        valid_before: u64::try_from(uint("validBefore")?).unwrap_or(u64::MAX),
        asked_at,
    })
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
