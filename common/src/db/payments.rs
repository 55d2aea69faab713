//! Payment states. A payment is `reserved` when its call is recorded, then ends in exactly one of
//! three outcomes of the settlement (issue 7): `settled` (or `unsettled` in development, where no
//! money moves), `refused`, or `unknown` until reconciliation proves one of the other two.

pub mod status {
    pub const RESERVED: &str = "reserved";
    pub const SETTLED: &str = "settled";
    /// Development only: verified locally, nothing moved.
    pub const UNSETTLED: &str = "unsettled";
    pub const REFUSED: &str = "refused";
    /// Nothing was processed, through no fault of the payer's (the facilitator refused our
    /// credentials): the reservation is handed back, and the same authorization may pay again.
    pub const RELEASED: &str = "released";
    /// The transfer may or may not have happened; the reconciliation sweep finds out.
    pub const UNKNOWN: &str = "unknown";
    /// Settled (the call delivered), then its transfer left the chain: a reorg dropped it, or it
    /// never was mined. For an operator (the reorg watch keeps looking for it to come back).
    pub const REORGED: &str = "reorged";

    /// States in which the call was paid for, so its work may run (and re-run for free).
    pub const PAID: [&str; 2] = [SETTLED, UNSETTLED];
}

/// Settled payments whose transfer is not final yet (the reorg watch's partial index,
/// migration 21), as a literal for the same reason as `status_is`.
pub fn settled_not_final() -> sea_orm::sea_query::SimpleExpr {
    sea_orm::sea_query::Expr::cust(format!(
        r#""status" IN ('{}', '{}') AND "final_at" IS NULL"#,
        status::SETTLED,
        status::REORGED
    ))
}

/// `status = '<state>'` written as a literal, for the sweeps that read the payments in flight
/// (`reserved`, `unknown`) through their partial indexes (migration 11). Bound as a parameter,
/// the state is unknown to a plan PostgreSQL caches for every value, and such a plan cannot
/// use an index whose predicate names one state: it scanned the whole table (checked with
/// `plan_cache_mode = force_generic_plan` on 50,000 payments). `state` is one of `status`'s
/// constants, never input.
pub fn status_is(state: &'static str) -> sea_orm::sea_query::SimpleExpr {
    debug_assert!(state.bytes().all(|b| b.is_ascii_lowercase()));
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
    let unknown = payment::Entity::find().filter(status_is(status::UNKNOWN));
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
