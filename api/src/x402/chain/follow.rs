//! Following our settlement transaction until one of its versions lands deep enough
//! (`SETTLEMENT_CONFIRMATIONS`), while the request waits and then in reconciliation.
//!
//! While it may still be mined, the node is handed the latest version's signed bytes again
//! (harmless if it has them; re-admitted if it dropped them, which also fills the settler's nonce
//! gap). One pending longer than `SETTLER_REPLACE_AFTER_S` is replaced at the same nonce with
//! fees at least 12.5 % higher (`fees::Market::replacement`); the versions share a nonce, so at
//! most one is ever mined. Only when none of them ever can be — their nonce used by another
//! transaction, or mined and reverted — is a new transaction sent.

use super::{
    SelfSettler,
    authorization::Authorization,
    fees::Fees,
    node_answer::{self, SendAnswer},
    versions::Versions,
};
use crate::x402::settle::{SentTransaction, SettleOutcome};
use alloy_consensus::{Transaction as _, TxEnvelope};
use alloy_network::eip2718::{Decodable2718, Encodable2718};
use alloy_network::{NetworkTransactionBuilder, TransactionBuilder};
use alloy_primitives::TxHash;
use alloy_provider::{Provider, transport::RpcError};
use alloy_rpc_types_eth::TransactionRequest;
use std::time::Duration;
use tokio::time::{Instant, timeout_at};

/// How often the receipt of a sent settlement is asked for.
const RECEIPT_POLL: Duration = Duration::from_millis(200);
/// How many pending transactions' first sightings are remembered (see `pending_since`).
const PENDING_REMEMBERED: usize = 10_000;

/// Where the versions stand.
enum Look {
    /// One was mined and succeeded, `depth` blocks deep (its own block counts as one).
    Landed { hash: TxHash, depth: u64 },
    /// One was mined and reverted.
    Reverted(TxHash),
    /// None is mined.
    NotMined,
    /// The RPC failed.
    Unreadable(String),
}

impl SelfSettler {
    /// The request's wait: polls every version until one lands deep enough, replacing the latest
    /// when it stays pending, until `deadline`; then the outcome is unknown and reconciliation
    /// follows all the versions.
    pub(super) async fn until_landed(
        &self,
        mut versions: Versions,
        auth: &Authorization,
        deadline: Instant,
    ) -> SettleOutcome {
        let mut last_sent = Instant::now();
        loop {
            let Ok(look) = timeout_at(deadline, self.look(&versions)).await else {
                break;
            };
            match look {
                Look::Landed { hash, depth } if depth >= self.options.confirmations => {
                    return settled(hash);
                }
                Look::Reverted(hash) => return self.reverted(hash, auth).await,
                Look::NotMined if last_sent.elapsed() >= self.options.replace_after => {
                    if let Ok(replaced) = timeout_at(deadline, self.replace(&mut versions)).await {
                        replaced.unwrap_or_else(|why| {
                            tracing::warn!(tx = %versions.latest().hash, why, "x402.settle_self not replaced");
                        });
                    }
                    last_sent = Instant::now();
                }
                Look::Unreadable(e) => {
                    tracing::debug!(error = %e, "x402.settle_self receipt poll failed");
                }
                Look::Landed { .. } | Look::NotMined => {}
            }
            if Instant::now() + RECEIPT_POLL > deadline {
                break;
            }
            tokio::time::sleep(RECEIPT_POLL).await;
        }
        tracing::warn!(tx = %versions.latest().hash, versions = versions.len(),
            "x402.settle_self not landed in time");
        // Reconciliation's replacement clock starts where this one stopped.
        self.remember_pending(versions.latest().hash, last_sent);
        SettleOutcome::Unknown {
            reason: "settlement_pending".into(),
            sent: Some(versions.to_sent()),
        }
    }

    /// Reconciliation's look at the transaction we already sent: its outcome, or `None` when no
    /// version of it ever will be mined with effect and a new one should be sent.
    pub(super) async fn follow(
        &self,
        sent: &SentTransaction,
        auth: &Authorization,
    ) -> Option<SettleOutcome> {
        // A hash someone else named: nothing of ours to follow or re-broadcast.
        let mut versions = Versions::from_sent(sent)?;
        let unknown = |reason: String, versions: &Versions| SettleOutcome::Unknown {
            reason,
            sent: Some(versions.to_sent()),
        };
        match self.look(&versions).await {
            Look::Landed { hash, depth } if depth >= self.options.confirmations => {
                return Some(settled(hash));
            }
            Look::Landed { .. } => return Some(unknown("settlement_confirming".into(), &versions)),
            Look::Reverted(hash) => {
                tracing::warn!(tx = %hash, payer = %auth.from, nonce = %auth.nonce,
                    "x402.settle_self earlier transaction reverted; sending a new one");
                return None;
            }
            Look::Unreadable(e) => return Some(unknown(e, &versions)),
            Look::NotMined => {}
        }
        let latest = versions.latest().clone();
        let reason = match self.rpc.provider.send_raw_transaction(&latest.raw).await {
            Ok(_) => "settlement_pending".to_owned(),
            Err(RpcError::ErrorResp(p)) if node_answer::already_has_it(&p.message) => {
                "settlement_pending".to_owned()
            }
            Err(RpcError::ErrorResp(p))
                if p.message.to_ascii_lowercase().contains("nonce too low") =>
            {
                // The nonce is spent: by one of ours, mined since the first look, or by another.
                return match self.look(&versions).await {
                    Look::NotMined => {
                        tracing::warn!(tx = %latest.hash, payer = %auth.from, nonce = %auth.nonce,
                            "x402.settle_self nonce used by another transaction; sending a new one");
                        None
                    }
                    Look::Landed { hash, depth } if depth >= self.options.confirmations => {
                        Some(settled(hash))
                    }
                    Look::Reverted(_) => None,
                    Look::Landed { .. } => Some(unknown("settlement_confirming".into(), &versions)),
                    Look::Unreadable(e) => Some(unknown(e, &versions)),
                };
            }
            // Refused again (its fee now below the base fee, the pool full): not mined, and its
            // nonce not spent, so it still may be; a replacement with higher fees may do better.
            Err(RpcError::ErrorResp(p)) => {
                format!("re-broadcast refused by the node: {}", p.message)
            }
            Err(e) => return Some(unknown(self.rpc.describe(&e), &versions)),
        };
        // Pending: replaced once it has been for long enough.
        let since = self.remember_pending(latest.hash, Instant::now());
        if since.elapsed() >= self.options.replace_after {
            match self.replace(&mut versions).await {
                Ok(()) => self.forget_pending(latest.hash),
                Err(why) => tracing::warn!(tx = %latest.hash, why, "x402.settle_self not replaced"),
            }
        }
        Some(unknown(reason, &versions))
    }

    /// Receipts of every version, newest first.
    async fn look(&self, versions: &Versions) -> Look {
        for version in versions.newest_first() {
            match self
                .rpc
                .provider
                .get_transaction_receipt(version.hash)
                .await
            {
                Ok(Some(receipt)) if receipt.status() => {
                    let mined_in = receipt.block_number.unwrap_or(u64::MAX);
                    return match self.rpc.provider.get_block_number().await {
                        Ok(head) => Look::Landed {
                            hash: version.hash,
                            depth: (head + 1).saturating_sub(mined_in),
                        },
                        Err(e) => Look::Unreadable(self.rpc.describe(&e)),
                    };
                }
                Ok(Some(_)) => return Look::Reverted(version.hash),
                Ok(None) => {}
                Err(e) => return Look::Unreadable(self.rpc.describe(&e)),
            }
        }
        Look::NotMined
    }

    /// Signs the latest version again at the same nonce with higher fees and sends it. `Err`
    /// says why there is no new version (the cap leaves no room, the node refused it).
    async fn replace(&self, versions: &mut Versions) -> Result<(), String> {
        let latest = versions.latest().clone();
        let Ok(TxEnvelope::Eip1559(signed)) = TxEnvelope::decode_2718(&mut latest.raw.as_ref())
        else {
            return Err("the latest version is not an EIP-1559 transaction".into());
        };
        let mut tx = signed.tx().clone();
        let old = Fees {
            max_fee: tx.max_fee_per_gas(),
            priority: tx.max_priority_fee_per_gas().unwrap_or_default(),
        };
        let market = self
            .market()
            .await
            .map_err(|_| "fee history unreadable".to_owned())?;
        let Some(new) = market.replacement(old, self.options.max_fee_wei) else {
            return Err(format!(
                "no room under SETTLER_MAX_FEE_GWEI for fees 12.5 % above {old:?} (base fee {})",
                market.base_fee
            ));
        };
        tx.max_fee_per_gas = new.max_fee;
        tx.max_priority_fee_per_gas = new.priority;
        let request = TransactionRequest::from_transaction(tx).with_from(self.settler);
        let raw = request
            .build(&self.wallet)
            .await
            .map_err(|e| format!("could not sign: {e}"))?
            .encoded_2718();
        let answer = match self.rpc.provider.send_raw_transaction(&raw).await {
            Ok(_) => SendAnswer::Holds,
            Err(e) => node_answer::classify(&e),
        };
        match answer {
            // Followed even when the answer was lost: a version never mined costs nothing.
            SendAnswer::Holds | SendAnswer::Unknown => {
                versions.push(raw.into());
                tracing::info!(replaced = %latest.hash, by = %versions.latest().hash,
                    max_fee = new.max_fee, priority = new.priority, "x402.settle_self replaced");
                Ok(())
            }
            SendAnswer::NonceTaken => {
                Err("the node refused it: nonce used or replacement underpriced".into())
            }
            SendAnswer::NotSent(why) => Err(format!("the node refused it: {why}")),
        }
    }

    /// When `hash` was first seen pending (`at` if not before). In memory only: after a restart
    /// the clock starts again, which delays a replacement and never hastens one.
    fn remember_pending(&self, hash: TxHash, at: Instant) -> Instant {
        let mut seen = self.pending_since.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= PENDING_REMEMBERED {
            seen.clear();
        }
        *seen.entry(hash).or_insert(at)
    }

    fn forget_pending(&self, hash: TxHash) {
        self.pending_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&hash);
    }
}

fn settled(hash: TxHash) -> SettleOutcome {
    SettleOutcome::Settled {
        transaction: hash.to_string(),
        local: false,
    }
}
