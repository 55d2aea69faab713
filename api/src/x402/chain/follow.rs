//! Reconciliation of our own settlement: follow the transaction we already sent instead of sending
//! another on every pass. While it may still be mined, the node is handed exactly its signed bytes
//! again (harmless if it has them; re-admitted if it dropped them, which also fills the settler's
//! nonce gap). Only a transaction that provably never will be mined — its nonce taken by another,
//! or mined and reverted — is replaced by a new one.

use super::{SelfSettler, authorization::Authorization};
use crate::x402::settle::{SentTransaction, SettleOutcome};
use alloy_primitives::TxHash;
use alloy_provider::{Provider, transport::RpcError};

/// Whether a node's refusal of a raw transaction means it already holds that very transaction
/// (geth and reth: "already known"; anvil: "transaction already imported").
pub(super) fn already_has_it(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already known") || m.contains("already imported") || m.contains("known transaction")
}

/// Where our earlier transaction stands.
enum Standing {
    /// Mined and successful.
    Mined,
    /// Not mined yet, and it still can be.
    Pending,
    /// It never will carry the settlement (reverted, or its nonce used by another transaction).
    Dropped(&'static str),
    /// Could not tell (the RPC failed, or an answer we do not understand).
    Unknowable(String),
}

impl SelfSettler {
    /// The outcome told by the transaction we sent, or `None` when it provably never will be
    /// mined with effect and a new one should be sent.
    pub(super) async fn follow(
        &self,
        sent: &SentTransaction,
        auth: &Authorization,
    ) -> Option<SettleOutcome> {
        let unknown = |reason: String| SettleOutcome::Unknown {
            reason,
            sent: Some(sent.clone()),
        };
        let (Ok(hash), Some(raw)) = (sent.hash.parse::<TxHash>(), sent.raw.as_deref()) else {
            // A hash someone else named: nothing of ours to re-broadcast.
            return None;
        };
        match self.standing(hash, raw).await {
            Standing::Mined => Some(SettleOutcome::Settled {
                transaction: sent.hash.clone(),
                local: false,
            }),
            Standing::Pending => Some(unknown("settlement_pending".into())),
            Standing::Unknowable(reason) => Some(unknown(reason)),
            Standing::Dropped(why) => {
                tracing::warn!(tx = %sent.hash, payer = %auth.from, nonce = %auth.nonce, why,
                    "x402.settle_self earlier transaction will never settle; sending a new one");
                None
            }
        }
    }

    async fn standing(&self, hash: TxHash, raw: &str) -> Standing {
        if let Some(mined) = self.mined(hash).await {
            return mined;
        }
        let Ok(bytes) = alloy_primitives::hex::decode(raw) else {
            return Standing::Unknowable("stored transaction is not hex".into());
        };
        match self.rpc.provider.send_raw_transaction(&bytes).await {
            Ok(_) => Standing::Pending,
            Err(RpcError::ErrorResp(p)) if already_has_it(&p.message) => Standing::Pending,
            Err(RpcError::ErrorResp(p))
                if p.message.to_ascii_lowercase().contains("nonce too low") =>
            {
                // Its nonce is spent: by ours, mined since the first look, or by another.
                self.mined(hash).await.unwrap_or(Standing::Dropped(
                    "its nonce was used by another transaction",
                ))
            }
            Err(RpcError::ErrorResp(p)) => {
                Standing::Unknowable(format!("re-broadcast refused by the node: {}", p.message))
            }
            Err(e) => Standing::Unknowable(self.rpc.describe(&e)),
        }
    }

    /// `Some` once the transaction has a receipt (or the receipt cannot be read).
    async fn mined(&self, hash: TxHash) -> Option<Standing> {
        match self.rpc.provider.get_transaction_receipt(hash).await {
            Ok(Some(receipt)) if receipt.status() => Some(Standing::Mined),
            Ok(Some(_)) => Some(Standing::Dropped("it was mined and reverted")),
            Ok(None) => None,
            Err(e) => Some(Standing::Unknowable(self.rpc.describe(&e))),
        }
    }
}
