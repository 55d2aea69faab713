//! The reorg watch: a settled payment's transfer counts from `SETTLEMENT_CONFIRMATIONS` deep, which
//! Base's `safe` block reaches only minutes later, so a reorg may still drop a delivered call's
//! transfer. Each settled payment with a transaction is read again until its transfer is at the
//! `safe` block (final), for at most `WATCH_FOR`. One that left the chain becomes `reorged`: a
//! metric (`grove_settlements_total{outcome="reorged"}`), an error log line, and a row an operator
//! lists. The watch keeps looking, and a transfer that comes back (the dropped transaction
//! re-included) makes the payment `settled` again.

use super::{BATCH, decide::query_of};
use crate::{
    paid::ledger::{self, Watched},
    state::AppState,
};
use chrono::{DateTime, Duration, Utc};
use grove_common::db::{entities::payment, payments};
use sea_orm::{ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

/// How long after a payment is recorded its transfer is watched: Base's `safe` block trails the
/// head by minutes (docs/settlement.md); an hour covers an L1 batch delayed well past that.
const WATCH_FOR: Duration = Duration::hours(1);
/// How often one payment's transfer is read while it is not final.
const WATCH_EVERY: Duration = Duration::seconds(10);

/// One pass over the settled payments due a look. Returns how many became `reorged`.
pub(super) async fn watch(state: &AppState, now: DateTime<Utc>) -> Result<usize, DbErr> {
    let Some(chain) = &state.chain else {
        return Ok(0);
    };
    let due = payment::Entity::find()
        .filter(payments::settled_not_final())
        .filter(payment::Column::CreatedAt.gt(now - WATCH_FOR))
        .filter(payment::Column::Transaction.is_not_null())
        .filter(
            Condition::any()
                .add(payment::Column::NextCheckAt.is_null())
                .add(payment::Column::NextCheckAt.lte(now)),
        )
        .order_by_asc(payment::Column::CreatedAt)
        .limit(BATCH)
        .all(&state.db)
        .await?;
    let mut reorged = 0;
    for p in due {
        // Take the row for this look (several processes sweep at once).
        let lease = now + WATCH_EVERY;
        let taken = payment::Entity::update_many()
            .col_expr(
                payment::Column::NextCheckAt,
                sea_orm::sea_query::Expr::value(Some(lease)),
            )
            .filter(payment::Column::Id.eq(p.id))
            .filter(payment::Column::Status.eq(p.status))
            .filter(match p.next_check_at {
                Some(at) => payment::Column::NextCheckAt.eq(at),
                None => payment::Column::NextCheckAt.is_null(),
            })
            .exec(&state.db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        let (Some(transaction), Some(query)) = (&p.transaction, query_of(state, &p)) else {
            continue;
        };
        // When it was recorded settled (or last restored): the transfer existed by then.
        let reported_at = u64::try_from(p.updated_at.timestamp()).unwrap_or(0);
        let standing = match chain.transfer(transaction, &query, reported_at).await {
            Ok(standing) => standing,
            Err(e) => {
                tracing::debug!(payment = %p.id, error = %e, "reorg watch could not read the chain");
                continue;
            }
        };
        let watched = ledger::record_standing(&state.db, &p, &standing, now, lease).await?;
        match watched {
            Watched::Reorged => {
                reorged += 1;
                state.metrics.settlement("reorged");
                tracing::error!(payment = %p.id, call_id = %p.call_id, %transaction, ?standing,
                    "a delivered call's transfer left the chain: payment marked reorged for an operator");
            }
            Watched::Restored => {
                state.metrics.settlement("reorg_restored");
                tracing::warn!(payment = %p.id, call_id = %p.call_id, ?standing,
                    "a reorged payment's transfer is back on chain: settled again");
            }
            Watched::Final | Watched::Waiting | Watched::Lost => {}
        }
    }
    Ok(reorged)
}
