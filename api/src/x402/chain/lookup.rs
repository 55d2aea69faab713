//! Which transaction used an authorization, read at a depth that cannot roll back.
//!
//! USDC's `authorizationState` is true for a used and for a canceled authorization alike
//! (FiatToken v2 sets one flag for both), so a payer who cancels while our settlement's outcome is
//! unknown would look paid. A settlement is confirmed only by its `AuthorizationUsed` log followed,
//! in the same transaction, by the `Transfer` of our value to our payee; an `AuthorizationCanceled`
//! log proves it never will be.
//!
//! Where each answer is read (docs/settlement.md argues the choice):
//! - "paid" at `SETTLEMENT_CONFIRMATIONS` below the head (or at the `safe` block, if deeper); a
//!   reorg that later drops it is caught by the settled-payment watch (`paid::reconcile::reorgs`);
//! - "never" (canceled, used by another authorization, expired unused) only at the `safe` block,
//!   which cannot roll back, and "expired" only when that block's own timestamp is past
//!   `validBefore` plus a margin: the chain's clock, never ours;
//! - nothing at all from an RPC whose head is older than `BASE_RPC_MAX_HEAD_AGE_S`.

use super::{IUsdc, Rpc};
use crate::x402::settle::{AuthorizationQuery, AuthorizationState, TransferStanding};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, B256, TxHash};
use alloy_provider::Provider;
use alloy_rpc_types_eth::{BlockId, BlockNumberOrTag, Filter, Log, TransactionRequest};
use alloy_sol_types::{SolCall, SolEvent};

/// Blocks per `eth_getLogs` request: within what hosted Base RPCs accept in one request.
const LOG_SPAN: u64 = 1_000;
/// How far past `validBefore` the `safe` block's timestamp must be before "expired unused" is
/// decided. USDC refuses the authorization in any block stamped at or after `validBefore`, and
/// every later block is stamped later still, so zero would do in theory; six Base blocks cover
/// an endpoint that answers the block and the state from slightly different views.
pub const EXPIRY_MARGIN_S: u64 = 12;

/// How deep an answer must be, and how fresh the endpoint (`SETTLEMENT_CONFIRMATIONS`,
/// `BASE_RPC_MAX_HEAD_AGE_S`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finality {
    /// Blocks a transfer must have, its own included.
    pub confirmations: u64,
    /// Seconds the head may lag our wall clock before nothing is decided.
    pub max_head_age_s: u64,
}

/// `SETTLEMENT_CONFIRMATIONS` and `BASE_RPC_MAX_HEAD_AGE_S` as configured by default.
impl Default for Finality {
    fn default() -> Self {
        Self {
            confirmations: 2,
            max_head_age_s: 60,
        }
    }
}

impl Finality {
    pub fn of(settlement: &grove_common::config::SettlementConfig) -> Self {
        Self {
            confirmations: settlement.confirmations,
            max_head_age_s: settlement.max_head_age.as_secs(),
        }
    }
}

/// A block as the endpoint reported it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    pub(crate) number: u64,
    pub(crate) timestamp: u64,
}

/// The blocks one decision reads: the head, the `safe` block, and the confirmation depth.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) head: Seen,
    pub(crate) safe: Seen,
    /// The deepest block a transfer may be in and count as paid (never above the head).
    pub(crate) confirmed: u64,
}

impl Rpc {
    pub(super) async fn block(&self, tag: BlockNumberOrTag) -> Result<Seen, String> {
        let block = self
            .provider
            .get_block_by_number(tag)
            .await
            .map_err(|e| self.describe(&e))?
            .ok_or_else(|| format!("the endpoint has no {tag} block"))?;
        Ok(Seen {
            number: block.header.number,
            timestamp: block.header.timestamp,
        })
    }

    /// The head, checked for freshness against our wall clock (`asked_at`), and the blocks
    /// decisions are read at. `Err`: we do not know (the endpoint lags, or failed).
    pub(crate) async fn view(&self, asked_at: u64) -> Result<View, String> {
        let head = self.block(BlockNumberOrTag::Latest).await?;
        let age = asked_at.saturating_sub(head.timestamp);
        if age > self.finality.max_head_age_s {
            return Err(format!(
                "the RPC's head (block {}) is {age} s old, more than BASE_RPC_MAX_HEAD_AGE_S={}: we do not know",
                head.number, self.finality.max_head_age_s
            ));
        }
        let safe = self.block(BlockNumberOrTag::Safe).await?;
        let depth = self.finality.confirmations.saturating_sub(1);
        let confirmed = head.number.saturating_sub(depth).max(safe.number);
        Ok(View {
            head,
            safe,
            confirmed: confirmed.min(head.number),
        })
    }

    pub(super) async fn authorization(
        &self,
        q: &AuthorizationQuery,
    ) -> Result<AuthorizationState, String> {
        let view = self.view(q.asked_at).await?;
        if !self
            .used_at(q.authorizer, q.nonce, view.head.number)
            .await?
        {
            // Unused even at the head. "Never" needs the chain's own clock past `validBefore`
            // at a block that cannot roll back, and the state read at that very block.
            let expired = view.safe.timestamp >= q.valid_before.saturating_add(EXPIRY_MARGIN_S);
            if expired
                && !self
                    .used_at(q.authorizer, q.nonce, view.safe.number)
                    .await?
            {
                return Ok(AuthorizationState::Void {
                    reason: "authorization_expired_unused".into(),
                });
            }
            return Ok(AuthorizationState::Unused);
        }
        // Used or canceled. Final at the safe block either way.
        if let Some(state) = self.state_at(q, view.safe.number).await? {
            return Ok(state);
        }
        // A payment may count from the confirmation depth on; a refusal waits for `safe`.
        if view.confirmed > view.safe.number
            && let Some(paid @ AuthorizationState::Paid { .. }) =
                self.state_at(q, view.confirmed).await?
        {
            return Ok(paid);
        }
        Ok(AuthorizationState::NotFinal {
            reason: format!(
                "authorization used or canceled above block {} (head {}, safe {}): not final yet",
                view.confirmed, view.head.number, view.safe.number
            ),
        })
    }

    /// Where the transaction that settled `q` stands: final at the `safe` block, still above it,
    /// re-included under another hash, or gone.
    pub(super) async fn transfer(
        &self,
        transaction: &str,
        q: &AuthorizationQuery,
        reported_at: u64,
    ) -> Result<TransferStanding, String> {
        let view = self.view(q.asked_at).await?;
        let hash: TxHash = transaction
            .parse()
            .map_err(|_| format!("{transaction:?} is not a transaction hash"))?;
        let receipt = self
            .provider
            .get_transaction_receipt(hash)
            .await
            .map_err(|e| self.describe(&e))?;
        if let Some(receipt) = receipt.filter(|r| r.status()) {
            let block = receipt.block_number.unwrap_or(u64::MAX);
            return Ok(if block <= view.safe.number {
                TransferStanding::Final
            } else {
                TransferStanding::NotFinal
            });
        }
        // A view older than the report (an endpoint behind the one that reported it) proves
        // nothing about its absence.
        if view.head.timestamp < reported_at {
            return Ok(TransferStanding::NotFinal);
        }
        // Not on chain under that hash: did another transaction carry our authorization?
        Ok(match self.authorization(q).await? {
            AuthorizationState::Paid { transaction } => TransferStanding::Moved { transaction },
            AuthorizationState::NotFinal { .. } => TransferStanding::NotFinal,
            AuthorizationState::Unused => TransferStanding::Gone {
                reason: format!(
                    "transaction {transaction} is not on chain (head {}) and the authorization is unused: dropped by a reorg, or never mined",
                    view.head.number
                ),
            },
            AuthorizationState::Void { reason } => TransferStanding::Gone {
                reason: format!(
                    "transaction {transaction} is not on chain and the authorization is void ({reason})"
                ),
            },
        })
    }

    /// USDC's `authorizationState` at `block`.
    pub(super) async fn used_at(
        &self,
        authorizer: Address,
        nonce: B256,
        block: u64,
    ) -> Result<bool, String> {
        let call = IUsdc::authorizationStateCall { authorizer, nonce };
        let tx = TransactionRequest::default()
            .with_to(self.usdc())
            .with_input(call.abi_encode());
        let out = self
            .provider
            .call(tx)
            .block(BlockId::number(block))
            .await
            .map_err(|e| self.describe(&e))?;
        IUsdc::authorizationStateCall::abi_decode_returns(&out)
            .map_err(|e| format!("authorizationState answered {out}: {e}"))
    }

    /// What the chain up to `block` says: paid, void, or `None` when unused there.
    async fn state_at(
        &self,
        q: &AuthorizationQuery,
        block: u64,
    ) -> Result<Option<AuthorizationState>, String> {
        if !self.used_at(q.authorizer, q.nonce, block).await? {
            return Ok(None);
        }
        let log = self.authorization_log(q, block).await?.ok_or_else(|| {
            format!(
                "authorization used or canceled at block {block}, but no AuthorizationUsed or AuthorizationCanceled log since {}",
                q.since
            )
        })?;
        if log.topic0() == Some(&IUsdc::AuthorizationCanceled::SIGNATURE_HASH) {
            return Ok(Some(AuthorizationState::Void {
                reason: "authorization_canceled".into(),
            }));
        }
        let tx = log
            .transaction_hash
            .ok_or("an AuthorizationUsed log without its transaction")?;
        let receipt = self
            .provider
            .get_transaction_receipt(tx)
            .await
            .map_err(|e| self.describe(&e))?
            .ok_or_else(|| format!("no receipt for {tx}, which holds the AuthorizationUsed log"))?;
        // FiatToken emits the Transfer right after AuthorizationUsed.
        let next = log.log_index.map(|i| i + 1);
        let paid_us = receipt.logs().iter().any(|l| {
            l.log_index == next
                && l.address() == self.usdc()
                && IUsdc::Transfer::decode_log(&l.inner)
                    .is_ok_and(|t| t.from == q.authorizer && t.to == q.to && t.value == q.value)
        });
        Ok(Some(if paid_us {
            AuthorizationState::Paid {
                transaction: tx.to_string(),
            }
        } else {
            AuthorizationState::Void {
                reason: "authorization_nonce_used_elsewhere".into(),
            }
        }))
    }

    /// The `AuthorizationUsed` or `AuthorizationCanceled` log of `(authorizer, nonce)` (FiatToken
    /// emits one of them, once), searched from block `to` back to `since`.
    async fn authorization_log(
        &self,
        q: &AuthorizationQuery,
        mut to: u64,
    ) -> Result<Option<Log>, String> {
        let filter = Filter::new()
            .address(self.usdc())
            .event_signature(vec![
                IUsdc::AuthorizationUsed::SIGNATURE_HASH,
                IUsdc::AuthorizationCanceled::SIGNATURE_HASH,
            ])
            .topic1(q.authorizer.into_word())
            .topic2(B256::from(q.nonce));
        loop {
            let from = to.saturating_sub(LOG_SPAN - 1);
            let logs = self
                .provider
                .get_logs(&filter.clone().from_block(from).to_block(to))
                .await
                .map_err(|e| self.describe(&e))?;
            if let Some(log) = logs.into_iter().next() {
                return Ok(Some(log));
            }
            if from == 0 {
                return Ok(None);
            }
            let block = self.block(BlockNumberOrTag::Number(from)).await?;
            if block.timestamp < q.since {
                return Ok(None);
            }
            to = from - 1;
        }
    }
}
