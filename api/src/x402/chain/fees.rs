//! The fees a settlement transaction is signed with, held under `SETTLER_MAX_FEE_GWEI`, and the
//! higher fees of its replacement.
//!
//! A transaction is sent only when it can be included now: the next block's base fee leaves room
//! under the cap for at least one wei of tip. Above that nothing is sent (the payment is released
//! with a 503): a transaction the chain cannot include holds every later nonce of the key.

use super::SelfSettler;
use crate::x402::settle::{SETTLER_UNAVAILABLE, SettleOutcome, not_sent};
use alloy_provider::Provider;
use alloy_rpc_types_eth::BlockNumberOrTag;

/// Blocks of history read to estimate the tip (alloy's own estimator takes 10 as well).
const HISTORY_BLOCKS: u64 = 10;
/// The tip percentile of those blocks.
const TIP_PERCENTILE: f64 = 20.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fees {
    pub max_fee: u128,
    pub priority: u128,
}

/// The chain's current fee market: the next block's base fee and the usual tip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Market {
    pub base_fee: u128,
    pub tip: u128,
}

impl Market {
    /// The fees of a new transaction under `cap`, or `None` when the base fee leaves no room.
    /// Twice the base fee plus the tip (alloy's and MetaMask's margin for rising base fees),
    /// cut to the cap; the tip cut so that it fits under the max fee.
    pub fn fees(&self, cap: u128) -> Option<Fees> {
        if self.base_fee >= cap {
            return None;
        }
        let max_fee = (self.base_fee.saturating_mul(2).saturating_add(self.tip)).min(cap);
        Some(Fees {
            max_fee,
            priority: self.tip.min(max_fee - self.base_fee).max(1),
        })
    }

    /// The fees of a replacement of a transaction signed with `old`: both at least 12.5 % higher
    /// (nodes want 10 %; geth and reth refuse less as "replacement transaction underpriced"), and
    /// no lower than a new transaction's. `None` when the cap leaves no room for that.
    pub fn replacement(&self, old: Fees, cap: u128) -> Option<Fees> {
        let bump = |fee: u128| fee.saturating_add(fee.div_ceil(8));
        let fresh = self.fees(cap).unwrap_or(Fees {
            max_fee: 0,
            priority: 0,
        });
        let priority = bump(old.priority).max(fresh.priority);
        let max_fee = bump(old.max_fee)
            .max(fresh.max_fee)
            .max(self.base_fee.saturating_add(priority));
        (max_fee <= cap && priority <= max_fee).then_some(Fees { max_fee, priority })
    }
}

impl SelfSettler {
    /// The fee market from `eth_feeHistory` (one request). `Err` is a definite outcome: nothing
    /// was sent.
    pub(super) async fn market(&self) -> Result<Market, SettleOutcome> {
        let history = self
            .rpc
            .provider
            .get_fee_history(HISTORY_BLOCKS, BlockNumberOrTag::Latest, &[TIP_PERCENTILE])
            .await
            .map_err(|e| self.unavailable(&e))?;
        let Some(base_fee) = history.next_block_base_fee() else {
            tracing::warn!("x402.settle_self eth_feeHistory named no base fee");
            return Err(SettleOutcome::Refused {
                reason: SETTLER_UNAVAILABLE.into(),
            });
        };
        let rewards = history.reward.unwrap_or_default();
        let tip = alloy_provider::utils::eip1559_default_estimator(base_fee, &rewards)
            .max_priority_fee_per_gas;
        Ok(Market { base_fee, tip })
    }

    /// The fees of a new transaction, or the 503 of a base fee above the cap.
    pub(super) async fn fees(&self) -> Result<Fees, SettleOutcome> {
        let market = self.market().await?;
        market.fees(self.options.max_fee_wei).ok_or_else(|| {
            tracing::warn!(
                base_fee = market.base_fee,
                cap = self.options.max_fee_wei,
                "x402.settle_self base fee above SETTLER_MAX_FEE_GWEI; nothing sent"
            );
            SettleOutcome::Refused {
                reason: not_sent::FEE_ABOVE_CAP.into(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GWEI: u128 = 1_000_000_000;

    #[test]
    fn a_new_transaction_fits_under_the_cap_or_is_not_sent() {
        let market = Market {
            base_fee: GWEI / 100,
            tip: GWEI / 1000,
        };
        assert_eq!(
            market.fees(GWEI / 2),
            Some(Fees {
                max_fee: 2 * GWEI / 100 + GWEI / 1000,
                priority: GWEI / 1000
            })
        );
        // Close to the cap: the max fee is the cap, the tip what is left above the base fee.
        let tight = Market {
            base_fee: 4 * GWEI / 10,
            tip: GWEI,
        };
        assert_eq!(
            tight.fees(GWEI / 2),
            Some(Fees {
                max_fee: GWEI / 2,
                priority: GWEI / 10
            })
        );
        for base_fee in [GWEI / 2, GWEI] {
            let market = Market { base_fee, tip: 1 };
            assert_eq!(market.fees(GWEI / 2), None, "{base_fee}");
        }
    }

    #[test]
    fn a_replacement_raises_both_fees_by_at_least_an_eighth_within_the_cap() {
        let old = Fees {
            max_fee: 2 * GWEI,
            priority: GWEI / 10,
        };
        let calm = Market {
            base_fee: GWEI / 100,
            tip: 1,
        };
        let new = calm
            .replacement(old, 10 * GWEI)
            .expect("room under the cap");
        assert!(new.max_fee * 8 >= old.max_fee * 9, "{new:?}");
        assert!(new.priority * 8 >= old.priority * 9, "{new:?}");
        // The base fee rose past the old max fee: the replacement follows the market.
        let risen = Market {
            base_fee: 3 * GWEI,
            tip: 1,
        };
        let new = risen.replacement(old, 10 * GWEI).expect("room");
        assert!(new.max_fee >= 6 * GWEI, "{new:?}");
        // No room for an eighth more under the cap: no replacement.
        assert_eq!(calm.replacement(old, 2 * GWEI + GWEI / 8), None);
        // One wei fees still rise (rounding up).
        let tiny = Fees {
            max_fee: 1,
            priority: 1,
        };
        let new = Market {
            base_fee: 0,
            tip: 1,
        }
        .replacement(tiny, GWEI)
        .expect("room");
        assert!(new.max_fee >= 2 && new.priority >= 2, "{new:?}");
    }
}
