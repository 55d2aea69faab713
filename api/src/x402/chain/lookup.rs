//! Which transaction used an authorization. USDC's `authorizationState` is true for a used and for
//! a canceled authorization alike (FiatToken v2 sets one flag for both), so a payer who cancels
//! while our settlement's outcome is unknown would look paid. A settlement is confirmed only by
//! its `AuthorizationUsed` log followed, in the same transaction, by the `Transfer` of our value to
//! our payee; an `AuthorizationCanceled` log proves it never will be.

use super::{IUsdc, Rpc};
use crate::x402::settle::{AuthorizationQuery, AuthorizationState};
use alloy_primitives::B256;
use alloy_provider::Provider;
use alloy_rpc_types_eth::{BlockNumberOrTag, Filter, Log};
use alloy_sol_types::SolEvent;

/// Blocks per `eth_getLogs` request: within what hosted Base RPCs accept in one request.
const LOG_SPAN: u64 = 1_000;

impl Rpc {
    pub(super) async fn authorization(
        &self,
        q: &AuthorizationQuery,
    ) -> Result<AuthorizationState, String> {
        if !self.authorization_used(q.authorizer, q.nonce).await? {
            return Ok(AuthorizationState::Unused);
        }
        let log = self.authorization_log(q).await?.ok_or_else(|| {
            format!(
                "authorization used or canceled, but no AuthorizationUsed or AuthorizationCanceled log since {}",
                q.since
            )
        })?;
        if log.topic0() == Some(&IUsdc::AuthorizationCanceled::SIGNATURE_HASH) {
            return Ok(AuthorizationState::Void {
                reason: "authorization_canceled".into(),
            });
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
        Ok(if paid_us {
            AuthorizationState::Paid {
                transaction: tx.to_string(),
            }
        } else {
            AuthorizationState::Void {
                reason: "authorization_nonce_used_elsewhere".into(),
            }
        })
    }

    /// The `AuthorizationUsed` or `AuthorizationCanceled` log of `(authorizer, nonce)` (FiatToken
    /// emits one of them, once), searched from the latest block back to `since`.
    async fn authorization_log(&self, q: &AuthorizationQuery) -> Result<Option<Log>, String> {
        let filter = Filter::new()
            .address(self.usdc())
            .event_signature(vec![
                IUsdc::AuthorizationUsed::SIGNATURE_HASH,
                IUsdc::AuthorizationCanceled::SIGNATURE_HASH,
            ])
            .topic1(q.authorizer.into_word())
            .topic2(B256::from(q.nonce));
        let mut to = self
            .provider
            .get_block_number()
            .await
            .map_err(|e| self.describe(&e))?;
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
            let block = self
                .provider
                .get_block_by_number(BlockNumberOrTag::Number(from))
                .await
                .map_err(|e| self.describe(&e))?
                .ok_or_else(|| format!("block {from} not found"))?;
            if block.header.timestamp < q.since {
                return Ok(None);
            }
            to = from - 1;
        }
    }
}
