//! The three outcomes of moving money (issue 7): it happened, it did not and will not happen, or we
//! do not know. Every settler (an x402 facilitator over HTTP, our own settlement on chain, the
//! development default) answers with a `SettleOutcome`; the paid flow never sees transport errors.
//!
//! "Unknown" is never a refusal: a timeout, a 5xx or a `settlement_pending` can hide a transfer that
//! landed, so an unknown payment is reconciled (`paid::reconcile`), never released by guessing.

mod facilitated;

pub use super::facilitator::FACILITATOR_UNAUTHORIZED;
pub use facilitated::{ViaFacilitator, means_nonce_used};

use super::facilitator::SettleRequest;
use alloy_primitives::{Address, B256, U256};
use async_trait::async_trait;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettleOutcome {
    /// The transfer happened. `transaction` is its hash; empty only for the development default,
    /// which moves no money (`local == true`), and for a reconciliation that could prove the
    /// transfer but not name its transaction (no `BASE_RPC_URL`).
    Settled { transaction: String, local: bool },
    /// A definite answer that the transfer did not and will not happen.
    Refused { reason: String },
    /// It may or may not have happened. `sent` is a transaction that may carry it, when one is
    /// known: reconciliation follows it rather than sending another.
    Unknown {
        reason: String,
        sent: Option<SentTransaction>,
    },
}

/// A transaction that may carry a settlement whose outcome is unknown: the one a facilitator's
/// `settlement_pending` answer (or an answer we cannot attribute) named, or one we sent ourselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentTransaction {
    /// The latest version's hash.
    pub hash: String,
    /// When we sent it: every signed version (EIP-2718, 0x-hex, oldest first, comma-separated;
    /// a replacement at the same nonce with higher fees is a new version). Reconciliation follows
    /// them all, hands the node the latest again, and sends a new transaction only once none of
    /// them ever can be mined.
    pub raw: Option<String>,
}

/// The refusal reason of our own settlement when nothing was sent because of us (the RPC is
/// unreachable, the key cannot sign, the deadline passed in our queue): the operator's fault too.
pub const SETTLER_UNAVAILABLE: &str = "settlement_unavailable";

/// Why our own settlement sent nothing, when the node or our limits said so before broadcast
/// (docs/settlement.md, "Sending a settlement"). Each is the operator's fault, never the
/// payer's: the payment is released and the same authorization settles once it is fixed.
pub mod not_sent {
    /// The settler key has too little ETH for the gas.
    pub const SETTLER_OUT_OF_FUNDS: &str = "settler_out_of_funds";
    /// The base fee is above `SETTLER_MAX_FEE_GWEI`, or rose above our fee before the send.
    pub const FEE_ABOVE_CAP: &str = "fee_above_cap";
    /// The RPC provider's rate limit (HTTP 429, JSON-RPC -32005).
    pub const RATE_LIMITED: &str = "rpc_rate_limited";
    /// The settler key's nonce stayed taken by another sender after a fresh read.
    pub const NONCE_TAKEN: &str = "settler_nonce_taken";
    /// Any other refusal by the node of a transaction it did not take.
    pub const NODE_REFUSED: &str = "node_refused";

    pub(crate) const ALL: [&str; 5] = [
        SETTLER_OUT_OF_FUNDS,
        FEE_ABOVE_CAP,
        RATE_LIMITED,
        NONCE_TAKEN,
        NODE_REFUSED,
    ];
}

impl SettleOutcome {
    /// The metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Settled { local: true, .. } => "unsettled",
            Self::Settled { .. } => "settled",
            Self::Refused { .. } if self.is_operator_fault() => "not_processed",
            Self::Refused { .. } => "refused",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// An unknown outcome with no transaction to follow.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Self::Unknown {
            reason: reason.into(),
            sent: None,
        }
    }

    /// Nothing was settled because our own set-up is broken (the facilitator refused our
    /// credentials, our RPC is down): not the payer's fault, so not a 402, and the authorization
    /// stays usable.
    pub fn is_operator_fault(&self) -> bool {
        matches!(self, Self::Refused { reason }
            if reason == FACILITATOR_UNAUTHORIZED || reason == SETTLER_UNAVAILABLE
                || not_sent::ALL.contains(&reason.as_str()))
    }
}

/// One of our authorizations, as reconciliation asks the chain about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationQuery {
    pub authorizer: Address,
    pub nonce: B256,
    /// What the authorization pays, and to whom: a use of its nonce that moved anything else was
    /// another authorization's (the payer signed two with one nonce), never our payment.
    pub to: Address,
    pub value: U256,
    /// Unix seconds: uses before this are not looked for (it bounds the log search).
    pub since: u64,
    /// The authorization's `validBefore` (unix seconds): USDC accepts it only in a block whose
    /// timestamp is below this, so unused at a final block past it, it never will be.
    pub valid_before: u64,
    /// Our wall clock when asking (unix seconds), only to judge how fresh the RPC's head is:
    /// never to decide that the authorization expired (the chain's time decides that).
    pub asked_at: u64,
}

/// What the chain says about one authorization. USDC's `authorizationState` is true for a used
/// and for a canceled authorization alike (EIP-3009 `cancelAuthorization`), so only the logs tell
/// a payment from a cancellation. Each answer is read at a depth that cannot roll back
/// (docs/settlement.md): a payment at the confirmation depth, a refusal only at the `safe` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorizationState {
    /// Neither used nor canceled, even at the head, and it may still be used.
    Unused,
    /// `AuthorizationUsed` in `transaction`, followed by the `Transfer` of our value to our payee,
    /// at least `SETTLEMENT_CONFIRMATIONS` deep.
    Paid { transaction: String },
    /// Canceled, its nonce used by another authorization, or unused at a `safe` block past its
    /// `validBefore`: ours can never move money.
    Void { reason: String },
    /// Used or canceled at the head, not yet deep enough to decide either way: ask again later.
    NotFinal { reason: String },
}

/// Where a settled payment's transfer stands, for the reorg watch (`paid::reconcile::reorgs`);
/// the ledger's type, since the ledger writes what the watch saw.
pub use grove_common::ledger::TransferStanding;

/// Reads a payment's authorization on chain. `Err` is "could not tell" (an unknown of its own).
#[async_trait]
pub trait AuthorizationReader: Send + Sync {
    /// USDC's `authorizationState(authorizer, nonce)`: used or canceled.
    async fn authorization_used(&self, authorizer: Address, nonce: B256) -> Result<bool, String>;
    /// Whether the authorization paid us, was voided, or is still unused.
    async fn authorization(&self, query: &AuthorizationQuery)
    -> Result<AuthorizationState, String>;
    /// Where the transaction that settled `query` stands now; it was reported settled at
    /// `reported_at` (unix s): a view whose head is older than that cannot hold it yet.
    async fn transfer(
        &self,
        transaction: &str,
        query: &AuthorizationQuery,
        reported_at: u64,
    ) -> Result<TransferStanding, String>;
}

/// Anything that settles a verified payment.
#[async_trait]
pub trait Settler: Send + Sync {
    async fn settle(&self, request: &SettleRequest) -> SettleOutcome;
    /// Reconciliation's attempt on a payment whose outcome is unknown, knowing the transaction
    /// that may carry it. A facilitator is simply asked again (the identical payload is safe: a
    /// used nonce cannot move money twice); our own settlement follows its transaction.
    async fn settle_again(
        &self,
        request: &SettleRequest,
        sent: Option<&SentTransaction>,
    ) -> SettleOutcome {
        let _ = sent;
        self.settle(request).await
    }
    /// Whether this settler moves no money (development): the payment is recorded `unsettled`.
    fn is_local(&self) -> bool {
        false
    }
}
