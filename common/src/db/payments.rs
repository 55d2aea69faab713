//! Reading payments by state. The states and their moves are `ledger::PaymentStatus`; the
//! ledger (`crate::ledger`) writes them.

use crate::ledger::status::PaymentStatus;

/// `status = '<state>'` written as a literal, for the sweeps that read the payments in flight
/// (`reserved`, `unknown`) through their partial indexes (migration 11). Bound as a parameter,
/// the state is unknown to a plan PostgreSQL caches for every value, and such a plan cannot
/// use an index whose predicate names one state: it scanned the whole table (checked with
/// `plan_cache_mode = force_generic_plan` on 50,000 payments).
pub fn status_is(state: PaymentStatus) -> sea_orm::sea_query::SimpleExpr {
    sea_orm::sea_query::Expr::cust(format!(r#""status" = '{state}'"#))
}
