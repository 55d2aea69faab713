//! Sending a settlement transaction and following it to its receipt: the nonce, the signed
//! bytes kept for reconciliation, and the three outcomes of what the chain answered.

use super::{
    SelfSettler,
    authorization::{Authorization, refusal_reason},
    follow,
};
use crate::x402::settle::{
    AuthorizationState, SETTLER_UNAVAILABLE, SentTransaction, SettleOutcome,
};
use alloy_network::NetworkTransactionBuilder;
use alloy_network::TransactionBuilder;
use alloy_network::eip2718::Encodable2718;
use alloy_primitives::TxHash;
use alloy_provider::Provider;
use alloy_provider::transport::{RpcError, TransportError};
use alloy_rpc_types_eth::TransactionRequest;
use grove_common::clock::{Clock, SystemClock};
use std::time::Duration;
use tokio::time::{Instant, timeout_at};

/// Gas headroom over the estimate: state can change between the estimate and the block.
const GAS_MARGIN_PERCENT: u64 = 25;
/// How often the receipt of a sent settlement is asked for.
const RECEIPT_POLL: Duration = Duration::from_millis(200);

impl SelfSettler {
    pub(super) async fn settle_authorization(&self, auth: &Authorization) -> SettleOutcome {
        let started = Instant::now();
        let deadline = started + self.timeout;
        // Smart wallets (wallet.rs): the call may deploy the payer's wallet first.
        let call = match timeout_at(deadline, self.settlement_call(auth)).await {
            Ok(Ok(call)) => call.with_from(self.settler),
            Ok(Err(outcome)) => return outcome,
            Err(_) => return too_slow_to_send(),
        };

        // Simulate, estimate gas and read fees at once; a revert is the chain's own refusal.
        let prepared = timeout_at(deadline, async {
            tokio::join!(
                self.rpc.provider.call(call.clone()).latest(),
                self.rpc.provider.estimate_gas(call.clone()).latest(),
                self.rpc.provider.estimate_eip1559_fees(),
            )
        })
        .await;
        let Ok((simulated, gas, fees)) = prepared else {
            return too_slow_to_send();
        };
        if let Err(e) = simulated {
            return self.refusal(&e);
        }
        let (gas, fees) = match (gas, fees) {
            (Ok(gas), Ok(fees)) => (gas, fees),
            (Err(e), _) | (_, Err(e)) => return self.refusal(&e),
        };
        let tx = call
            .with_chain_id(self.chain_id)
            .with_gas_limit(gas + gas * GAS_MARGIN_PERCENT / 100)
            .with_max_fee_per_gas(fees.max_fee_per_gas)
            .with_max_priority_fee_per_gas(fees.max_priority_fee_per_gas);

        let sent = match self.send(tx, deadline).await {
            Ok(sent) => sent,
            Err(outcome) => return outcome,
        };
        tracing::info!(tx = %sent.hash, payer = %auth.from, nonce = %auth.nonce, "x402.settle_self sent");
        let outcome = self.await_receipt(&sent, auth, deadline).await;
        let label = outcome.label();
        tracing::info!(tx = %sent.hash, outcome = label, elapsed_ms = started.elapsed().as_millis() as u64,
            "x402.settle_self done");
        outcome
    }

    /// Signs and sends with the next nonce. `Ok` carries a transaction that may have reached the
    /// chain (sent, or lost in transport), with its signed bytes; `Err` is a definite outcome.
    pub(super) async fn send(
        &self,
        tx: TransactionRequest,
        deadline: Instant,
    ) -> Result<SentTransaction, SettleOutcome> {
        // Queued behind other settlements past the deadline: better not sent at all than sent
        // with no time left to see it land.
        let Ok(mut next) = timeout_at(deadline, self.next_nonce.lock()).await else {
            return Err(too_slow_to_send());
        };
        // A second attempt only after a nonce the node refused (another sender used it).
        for attempt in 0..2 {
            let nonce = match *next {
                Some(n) => n,
                None => match self
                    .rpc
                    .provider
                    .get_transaction_count(self.settler)
                    .pending()
                    .await
                {
                    Ok(n) => n,
                    Err(e) => return Err(self.unavailable(&e)),
                },
            };
            let signed = match tx.clone().with_nonce(nonce).build(&self.wallet).await {
                Ok(signed) => signed,
                Err(e) => {
                    tracing::error!(error = %e, "x402.settle_self could not sign");
                    return Err(SettleOutcome::Refused {
                        reason: SETTLER_UNAVAILABLE.into(),
                    });
                }
            };
            let raw = signed.encoded_2718();
            let sent = SentTransaction {
                hash: signed.tx_hash().to_string(),
                raw: Some(alloy_primitives::hex::encode_prefixed(&raw)),
            };
            // Forget the counter until the node answers: a send cut short leaves it to the chain.
            *next = None;
            match self.rpc.provider.send_raw_transaction(&raw).await {
                Ok(_) => {
                    *next = Some(nonce + 1);
                    return Ok(sent);
                }
                Err(RpcError::ErrorResp(payload)) => {
                    let message = payload.message.to_ascii_lowercase();
                    if follow::already_has_it(&message) {
                        *next = Some(nonce + 1);
                        return Ok(sent);
                    }
                    let nonce_taken = message.contains("nonce too low")
                        || message.contains("replacement transaction underpriced");
                    tracing::warn!(code = payload.code, message = %payload.message, nonce, attempt,
                        "x402.settle_self send refused by the node");
                    if !nonce_taken || attempt == 1 {
                        // The node did not take it, and we will not send it again.
                        return Err(SettleOutcome::Refused {
                            reason: "settlement_rejected".into(),
                        });
                    }
                }
                // The node may or may not have it: wait for a receipt under this hash.
                Err(e) => {
                    tracing::warn!(tx = %sent.hash, error = %self.rpc.describe(&e),
                        "x402.settle_self send failed in transport");
                    return Ok(sent);
                }
            }
        }
        Err(SettleOutcome::Refused {
            reason: "settlement_rejected".into(),
        })
    }

    pub(super) async fn await_receipt(
        &self,
        sent: &SentTransaction,
        auth: &Authorization,
        deadline: Instant,
    ) -> SettleOutcome {
        let pending = || {
            tracing::warn!(tx = %sent.hash, "x402.settle_self no receipt in time");
            SettleOutcome::Unknown {
                reason: "settlement_pending".into(),
                sent: Some(sent.clone()),
            }
        };
        let Ok(hash) = sent.hash.parse::<TxHash>() else {
            return pending();
        };
        loop {
            let Ok(polled) =
                timeout_at(deadline, self.rpc.provider.get_transaction_receipt(hash)).await
            else {
                return pending();
            };
            match polled {
                Ok(Some(receipt)) if receipt.status() => {
                    return SettleOutcome::Settled {
                        transaction: hash.to_string(),
                        local: false,
                    };
                }
                Ok(Some(_)) => return self.reverted(hash, auth).await,
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(tx = %hash, error = %self.rpc.describe(&e), "receipt poll failed");
                }
            }
            if Instant::now() + RECEIPT_POLL > deadline {
                return pending();
            }
            tokio::time::sleep(RECEIPT_POLL).await;
        }
    }

    /// Our transaction reverted: usually someone else submitted the same nonce first. If that was
    /// our very authorization, the money moved to us all the same.
    pub(super) async fn reverted(&self, hash: TxHash, auth: &Authorization) -> SettleOutcome {
        let asked_at = SystemClock.wall_unix();
        let state = self
            .rpc
            .authorization(&auth.query(lookback_start(), asked_at))
            .await;
        tracing::warn!(tx = %hash, ?state, "x402.settle_self reverted");
        match state {
            Ok(AuthorizationState::Paid { transaction }) => SettleOutcome::Settled {
                transaction,
                local: false,
            },
            Ok(AuthorizationState::Void { reason }) => SettleOutcome::Refused { reason },
            Ok(AuthorizationState::Unused) => SettleOutcome::Refused {
                reason: "transaction_reverted".into(),
            },
            // Used just now, by what is not deep enough to tell: reconciliation decides.
            Ok(AuthorizationState::NotFinal { reason }) => SettleOutcome::unknown(reason),
            // Used, but by what we cannot tell: not a refusal we could stand by.
            Err(e) => SettleOutcome::unknown(e),
        }
    }

    /// Before anything was sent: a revert is the chain's refusal; any other failure is ours and
    /// equally final, since nothing left this process.
    pub(super) fn refusal(&self, e: &TransportError) -> SettleOutcome {
        let revert = e.as_error_resp().and_then(|payload| {
            let data = payload.as_revert_data();
            let text = data
                .as_deref()
                .and_then(|d| alloy_sol_types::decode_revert_reason(d))
                .unwrap_or_else(|| payload.message.to_string());
            (data.is_some() || text.to_ascii_lowercase().contains("revert")).then_some(text)
        });
        match revert {
            Some(text) => SettleOutcome::Refused {
                reason: refusal_reason(&text),
            },
            None => self.unavailable(e),
        }
    }

    pub(super) fn unavailable(&self, e: &TransportError) -> SettleOutcome {
        tracing::warn!(error = %self.rpc.describe(e), "x402.settle_self RPC unavailable");
        SettleOutcome::Refused {
            reason: SETTLER_UNAVAILABLE.into(),
        }
    }
}

/// Nothing was sent, and nothing will be.
pub(super) fn too_slow_to_send() -> SettleOutcome {
    tracing::warn!("x402.settle_self deadline passed before sending");
    SettleOutcome::Refused {
        reason: SETTLER_UNAVAILABLE.into(),
    }
}

/// Where a search for an authorization's log may start: a use older than this would have been
/// refused before our first attempt, never left unknown.
pub(super) fn lookback_start() -> u64 {
    const LOOKBACK_S: u64 = 600;
    SystemClock.wall_unix().saturating_sub(LOOKBACK_S)
}
