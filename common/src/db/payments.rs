//! Reading payments by state. The states and their moves are `ledger::PaymentStatus`; the
//! ledger (`crate::ledger`) writes them.

use crate::ledger::status::PaymentStatus;

/// Settled payments whose transfer is not final yet (the reorg watch's partial index,
/// migration 21), as a literal for the same reason as `status_is`.
pub fn settled_not_final() -> sea_orm::sea_query::SimpleExpr {
    let [settled, reorged] = PaymentStatus::WATCHED;
    sea_orm::sea_query::Expr::cust(format!(
        r#""status" IN ('{settled}', '{reorged}') AND "final_at" IS NULL"#
    ))
}

/// `status = '<state>'` written as a literal, for the sweeps that read the payments in flight
/// (`reserved`, `unknown`) through their partial indexes (migration 11). Bound as a parameter,
/// the state is unknown to a plan PostgreSQL caches for every value, and such a plan cannot
/// use an index whose predicate names one state: it scanned the whole table (checked with
/// `plan_cache_mode = force_generic_plan` on 50,000 payments).
pub fn status_is(state: PaymentStatus) -> sea_orm::sea_query::SimpleExpr {
    sea_orm::sea_query::Expr::cust(format!(r#""status" = '{state}'"#))
}

/// Payments whose outcome is unknown: all of them, and those set aside for an operator (the
/// reconciliation gave up: no next check), for `/metrics` and its alerts. Both read the
/// partial index on unknown payments.
pub async fn unknown_counts(
    db: &impl sea_orm::ConnectionTrait,
) -> Result<UnknownCounts, sea_orm::DbErr> {
    use super::entities::payment;
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    let unknown = payment::Entity::find().filter(status_is(PaymentStatus::Unknown));
    Ok(UnknownCounts {
        unknown: unknown.clone().count(db).await?,
        set_aside: unknown
            .filter(payment::Column::NextCheckAt.is_null())
            .count(db)
            .await?,
    })
}

/// See [`unknown_counts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnknownCounts {
    pub unknown: u64,
    pub set_aside: u64,
}
