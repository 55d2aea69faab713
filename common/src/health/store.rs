//! The gates' shared state (table `provider_gates`), and the one place that writes it. Every
//! transition is a compare-and-set on the row, so concurrent processes agree: one of them
//! opens a gate, one takes each probe, and only the process holding the probe closes it or
//! sets its next probe.
//!
//! ```text
//! closed ──(a process's window trips)──▶ open ──(retry_at passes; one process takes the probe)──▶
//!   half-open (open, probe out) ──(probe passes)──▶ closed
//!                               └─(probe fails: retry_at doubles, capped)──▶ open
//! ```

use crate::db::entities::provider_gate::{self, Column, Entity};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, ExprTrait,
    QueryFilter, sea_query::Expr, sea_query::OnConflict,
};
use uuid::Uuid;

pub mod state {
    pub const CLOSED: &str = "closed";
    pub const OPEN: &str = "open";
}

/// Adds a closed row for each provider that has none.
pub async fn ensure(
    db: &impl ConnectionTrait,
    providers: &[&str],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for provider in providers {
        let row = provider_gate::ActiveModel {
            provider: Set((*provider).to_owned()),
            state: Set(state::CLOSED.to_owned()),
            opens: Set(0),
            opened_at: Set(None),
            closed_at: Set(None),
            retry_at: Set(None),
            probes_failed: Set(0),
            probe_by: Set(None),
            probe_until: Set(None),
            reason: Set(None),
            updated_at: Set(now),
        };
        Entity::insert(row)
            .on_conflict(OnConflict::column(Column::Provider).do_nothing().to_owned())
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

pub async fn load_all(db: &impl ConnectionTrait) -> Result<Vec<provider_gate::Model>, DbErr> {
    Entity::find().all(db).await
}

/// Closed → open, its first probe due at `first_probe`. False when it was not closed (another
/// process opened it first).
pub async fn open(
    db: &impl ConnectionTrait,
    provider: &str,
    reason: &str,
    now: DateTime<Utc>,
    first_probe: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let res = Entity::update_many()
        .col_expr(Column::State, Expr::value(state::OPEN))
        .col_expr(Column::Opens, Expr::col(Column::Opens).add(1))
        .col_expr(Column::OpenedAt, Expr::value(Some(now)))
        .col_expr(Column::RetryAt, Expr::value(Some(first_probe)))
        .col_expr(Column::ProbesFailed, Expr::value(0))
        .col_expr(Column::ProbeBy, Expr::value(Option::<Uuid>::None))
        .col_expr(
            Column::ProbeUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::Reason, Expr::value(Some(reason.to_owned())))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Provider.eq(provider))
        .filter(Column::State.eq(state::CLOSED))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// Takes the probe of an open gate whose probe is due and not held by a live lease: true for the
/// one process that gets it, which holds it until `lease_until`.
pub async fn take_probe(
    db: &impl ConnectionTrait,
    provider: &str,
    me: Uuid,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let free = Condition::any()
        .add(Column::ProbeUntil.is_null())
        .add(Column::ProbeUntil.lt(now));
    let res = Entity::update_many()
        .col_expr(Column::ProbeBy, Expr::value(Some(me)))
        .col_expr(Column::ProbeUntil, Expr::value(Some(lease_until)))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Provider.eq(provider))
        .filter(Column::State.eq(state::OPEN))
        .filter(Column::RetryAt.lte(now))
        .filter(free)
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// The probe passed: open → closed. False when `me` no longer held the probe.
pub async fn probe_passed(
    db: &impl ConnectionTrait,
    provider: &str,
    me: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let res = Entity::update_many()
        .col_expr(Column::State, Expr::value(state::CLOSED))
        .col_expr(Column::ClosedAt, Expr::value(Some(now)))
        .col_expr(Column::RetryAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(Column::ProbesFailed, Expr::value(0))
        .col_expr(Column::ProbeBy, Expr::value(Option::<Uuid>::None))
        .col_expr(
            Column::ProbeUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Provider.eq(provider))
        .filter(Column::State.eq(state::OPEN))
        .filter(Column::ProbeBy.eq(me))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// The probe failed: the gate stays open, the next probe is due at `next`. False when `me` no
/// longer held the probe.
pub async fn probe_failed(
    db: &impl ConnectionTrait,
    provider: &str,
    me: Uuid,
    now: DateTime<Utc>,
    next: DateTime<Utc>,
    reason: &str,
) -> Result<bool, DbErr> {
    let res = Entity::update_many()
        .col_expr(Column::RetryAt, Expr::value(Some(next)))
        .col_expr(Column::ProbesFailed, Expr::col(Column::ProbesFailed).add(1))
        .col_expr(Column::ProbeBy, Expr::value(Option::<Uuid>::None))
        .col_expr(
            Column::ProbeUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::Reason, Expr::value(Some(reason.to_owned())))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Provider.eq(provider))
        .filter(Column::State.eq(state::OPEN))
        .filter(Column::ProbeBy.eq(me))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}
