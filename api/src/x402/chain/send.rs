//! Sending a settlement transaction: simulation, fees under the cap, the nonce, the signed bytes
//! kept for reconciliation, and the three outcomes of what the node answered (`node_answer`).

use super::{
    SelfSettler,
    authorization::{Authorization, refusal_reason},
    node_answer::{self, SendAnswer},
    versions::Versions,
};
use crate::x402::settle::{AuthorizationState, SETTLER_UNAVAILABLE, SettleOutcome, not_sent};
use alloy_network::NetworkTransactionBuilder;
use alloy_network::TransactionBuilder;
use alloy_network::eip2718::Encodable2718;
use alloy_primitives::TxHash;
use alloy_provider::Provider;
use alloy_provider::transport::TransportError;
use alloy_rpc_types_eth::TransactionRequest;
use grove_common::clock::{Clock, SystemClock};
use tokio::time::{Instant, timeout_at};

/// Gas headroom over the estimate: state can change between the estimate and the block.
const GAS_MARGIN_PERCENT: u64 = 25;

impl SelfSettler {
    pub(super) async fn settle_authorization(&self, auth: &Authorization) -> SettleOutcome {
        let started = Instant::now();
        let deadline = started + self.options.timeout;
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
                self.fees(),
            )
        })
        .await;
        let Ok((simulated, gas, fees)) = prepared else {
            return too_slow_to_send();
        };
        if let Err(e) = simulated {
            return self.refusal(&e);
        }
        let gas = match gas {
            Ok(gas) => gas,
            Err(e) => return self.refusal(&e),
        };
        let fees = match fees {
            Ok(fees) => fees,
            Err(outcome) => return outcome,
        };
        let tx = call
            .with_chain_id(self.chain_id)
            .with_gas_limit(gas + gas * GAS_MARGIN_PERCENT / 100)
            .with_max_fee_per_gas(fees.max_fee)
            .with_max_priority_fee_per_gas(fees.priority);

        let versions = match self.send(tx, deadline).await {
            Ok(versions) => versions,
            Err(outcome) => return outcome,
        };
        tracing::info!(tx = %versions.latest().hash, payer = %auth.from, nonce = %auth.nonce,
            max_fee = fees.max_fee, "x402.settle_self sent");
        let outcome = self.until_landed(versions, auth, deadline).await;
        tracing::info!(
            outcome = outcome.label(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "x402.settle_self done"
        );
        outcome
    }

    /// Signs and sends with the next nonce. `Ok` carries a transaction that may have reached the
    /// chain (the node took it, or the answer was lost); `Err` is a definite outcome: nothing was
    /// sent, for a reason of ours (`settle::not_sent`), never the payer's.
    pub(super) async fn send(
        &self,
        tx: TransactionRequest,
        deadline: Instant,
    ) -> Result<Versions, SettleOutcome> {
        // One send at a time in this process, so that at most one database connection waits for
        // the shared counter. Queued past the deadline: better not sent at all than sent with no
        // time left to see it land.
        let Ok(_local) = timeout_at(deadline, self.sending.lock()).await else {
            return Err(too_slow_to_send());
        };
        let held = match timeout_at(deadline, self.nonces.hold(self.settler)).await {
            Ok(Ok(held)) => held,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "x402.settle_self could not hold the nonce counter");
                return Err(unavailable_reason(SETTLER_UNAVAILABLE));
            }
            Err(_) => return Err(too_slow_to_send()),
        };
        let mut next = held.next();
        let mut result = Err(unavailable_reason(not_sent::NONCE_TAKEN));
        // A second attempt only after a nonce the node said is taken (another sender used it).
        for attempt in 0..2 {
            let nonce = match next {
                Some(n) => n,
                None => match self
                    .rpc
                    .provider
                    .get_transaction_count(self.settler)
                    .pending()
                    .await
                {
                    Ok(n) => n,
                    Err(e) => {
                        result = Err(self.unavailable(&e));
                        break;
                    }
                },
            };
            let signed = match tx.clone().with_nonce(nonce).build(&self.wallet).await {
                Ok(signed) => signed,
                Err(e) => {
                    tracing::error!(error = %e, "x402.settle_self could not sign");
                    result = Err(unavailable_reason(SETTLER_UNAVAILABLE));
                    break;
                }
            };
            let versions = Versions::first(signed.encoded_2718().into());
            let answer = match self
                .rpc
                .provider
                .send_raw_transaction(&versions.latest().raw)
                .await
            {
                Ok(_) => SendAnswer::Holds,
                Err(e) => {
                    tracing::warn!(tx = %versions.latest().hash, error = %self.rpc.describe(&e), nonce,
                        attempt, "x402.settle_self send not accepted");
                    node_answer::classify(&e)
                }
            };
            match answer {
                SendAnswer::Holds => {
                    next = Some(nonce + 1);
                    result = Ok(versions);
                    break;
                }
                // The counter is left to the chain: the node may or may not have it.
                SendAnswer::Unknown => {
                    next = None;
                    result = Ok(versions);
                    break;
                }
                SendAnswer::NonceTaken => next = None,
                SendAnswer::NotSent(why) => {
                    result = Err(unavailable_reason(why));
                    break;
                }
            }
        }
        if let Err(e) = held.release(next).await {
            // The next send then meets a taken nonce and asks the chain.
            tracing::warn!(error = %e, "x402.settle_self could not store the next nonce");
        }
        result
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

    /// Before anything was sent: a revert is the chain's refusal of the payer's authorization;
    /// any other failure is ours (nothing left this process), and the payment is released.
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

    /// An RPC failure before anything was sent: the rate limit named as such, any other as the
    /// RPC being unavailable.
    pub(super) fn unavailable(&self, e: &TransportError) -> SettleOutcome {
        tracing::warn!(error = %self.rpc.describe(e), "x402.settle_self RPC unavailable");
        match node_answer::classify(e) {
            SendAnswer::NotSent(why) if why == not_sent::RATE_LIMITED => unavailable_reason(why),
            _ => unavailable_reason(SETTLER_UNAVAILABLE),
        }
    }
}

/// Nothing was sent, for a reason of ours.
fn unavailable_reason(why: &str) -> SettleOutcome {
    SettleOutcome::Refused { reason: why.into() }
}

/// Nothing was sent, and nothing will be.
pub(super) fn too_slow_to_send() -> SettleOutcome {
    tracing::warn!("x402.settle_self deadline passed before sending");
    unavailable_reason(SETTLER_UNAVAILABLE)
}

/// Where a search for an authorization's log may start: a use older than this would have been
/// refused before our first attempt, never left unknown.
pub(super) fn lookback_start() -> u64 {
    const LOOKBACK_S: u64 = 600;
    SystemClock.wall_unix().saturating_sub(LOOKBACK_S)
}
