//! The reorg watch's writes on a settled payment (the api's `paid::reconcile::reorgs`): final,
//! re-included, or gone. The only moves out of `settled`: `settled → reorged` when its transfer
//! left the chain, `reorged → settled` when it came back. Each write holds only if the payment
//! is still as the watch read it (its status, not yet final), so a racing watch is told `Lost`.

use super::status::PaymentStatus;
use crate::db::entities::payment;
use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, sea_query::Expr};

/// Where a settled payment's transfer stands, as the chain reads it (the api's
/// `x402::chain::lookup`), for the reorg watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferStanding {
    /// Mined with success at or below the `safe` block: it cannot roll back any more.
    Final,
    /// Still on chain (or used again at the head), not yet at the `safe` block.
    NotFinal,
    /// Our transfer is on chain under another transaction (re-included after a reorg).
    Moved { transaction: String },
    /// Not on chain any more (the reason): a reorg dropped it, or it never was mined.
    Gone { reason: String },
}

/// The states the watch reads (`db::payments::settled_not_final`) and writes from.
pub const WATCHED_FROM: [PaymentStatus; 2] = PaymentStatus::WATCHED;

/// What the write did, for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// Final at the `safe` block: the watch is over.
    Final,
    /// Not final yet; looked at again at `next`.
    Waiting,
    /// A settled payment's transfer left the chain: now `reorged`.
    Reorged,
    /// A `reorged` payment's transfer is back on chain: `settled` again.
    Restored,
    /// Someone else changed the row first.
    Lost,
}

/// Writes what the watch saw of `p`'s transfer. `next`: when to look again if it is not final.
pub async fn record_standing(
    db: &DatabaseConnection,
    p: &payment::Model,
    standing: &TransferStanding,
    now: DateTime<Utc>,
    next: DateTime<Utc>,
) -> Result<Watched, DbErr> {
    if !WATCHED_FROM.contains(&p.status) {
        return Ok(Watched::Lost);
    }
    let was_reorged = p.status == PaymentStatus::Reorged;
    // `updated_at` moves only with the status or the transaction: the watch reads it as the
    // time the transfer was reported, which a look that changes nothing must not move.
    let mut update = payment::Entity::update_many()
        .filter(payment::Column::Id.eq(p.id))
        .filter(payment::Column::Status.eq(p.status))
        .filter(payment::Column::FinalAt.is_null());
    // `reorged → settled`, or a settled payment's transaction corrected where it stays settled.
    let restore = |u: sea_orm::UpdateMany<payment::Entity>| {
        u.col_expr(payment::Column::Status, Expr::value(PaymentStatus::Settled))
            .col_expr(payment::Column::Error, Expr::value(Option::<String>::None))
            .col_expr(payment::Column::UpdatedAt, Expr::value(now))
    };
    let watched = match standing {
        TransferStanding::Final => {
            update = update
                .col_expr(payment::Column::FinalAt, Expr::value(Some(now)))
                .col_expr(
                    payment::Column::NextCheckAt,
                    Expr::value(Option::<DateTime<Utc>>::None),
                );
            // `restore` sets `updated_at` itself: PostgreSQL refuses a column assigned twice.
            if was_reorged {
                update = restore(update);
                Watched::Restored
            } else {
                update = update.col_expr(payment::Column::UpdatedAt, Expr::value(now));
                Watched::Final
            }
        }
        // A reorged transfer is restored once final (or seen under another hash), not on a
        // view that merely cannot tell yet.
        TransferStanding::NotFinal => {
            update = update.col_expr(payment::Column::NextCheckAt, Expr::value(Some(next)));
            Watched::Waiting
        }
        TransferStanding::Moved { transaction } => {
            update = restore(update)
                .col_expr(
                    payment::Column::Transaction,
                    Expr::value(Some(transaction.clone())),
                )
                .col_expr(payment::Column::NextCheckAt, Expr::value(Some(next)));
            if was_reorged {
                Watched::Restored
            } else {
                Watched::Waiting
            }
        }
        // Still gone: already surfaced once.
        TransferStanding::Gone { .. } if was_reorged => {
            update = update.col_expr(payment::Column::NextCheckAt, Expr::value(Some(next)));
            Watched::Waiting
        }
        TransferStanding::Gone { reason } => {
            update = update
                .col_expr(payment::Column::UpdatedAt, Expr::value(now))
                .col_expr(payment::Column::Status, Expr::value(PaymentStatus::Reorged))
                .col_expr(payment::Column::Error, Expr::value(Some(reason.clone())))
                .col_expr(payment::Column::NextCheckAt, Expr::value(Some(next)));
            Watched::Reorged
        }
    };
    Ok(if update.exec(db).await?.rows_affected == 1 {
        watched
    } else {
        Watched::Lost
    })
}
