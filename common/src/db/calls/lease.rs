//! A call's lease: which run of which process holds it while it works, how it is renewed and
//! moved to a process that took its liveness lock again, and who may store its outcome
//! (`Finisher`). Starting a run and taking one over move the call's state: the ledger does
//! those (`crate::ledger::start_attempt`, `take_over`).

use crate::clock;
use crate::db::entities::call;
use crate::ledger::status::{CallKind, CallStatus};
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait,
    FromQueryResult, QueryFilter, QuerySelect, QueryTrait,
    sea_query::{Alias, Expr, Query},
};
use std::collections::HashSet;
use uuid::Uuid;

/// How long a started run holds its call without renewing: the fallback for a process that is
/// alive (its liveness lock held, `super::liveness`) but stalled. A run whose process died is
/// taken over at once through the liveness lock, so this can be long enough never to lapse
/// falsely on a loaded machine. The run renews every `LEASE_RENEW_EVERY` while it works.
pub const LEASE: chrono::TimeDelta = chrono::TimeDelta::seconds(30);
pub const LEASE_RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The lease columns (migrations 4 and 7). They are not on the entity: only the functions below
/// read or write them, and every call row is created without a lease.
pub(crate) fn lease_until() -> Alias {
    Alias::new("lease_until")
}

/// The run holding the lease.
pub(crate) fn lease_owner() -> Alias {
    Alias::new("lease_owner")
}

/// The process that run lives in (its liveness key).
pub(crate) fn lease_process() -> Alias {
    Alias::new("lease_process")
}

/// Who starts a run: the run itself, and the process (liveness key) it runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runner {
    pub run: Uuid,
    pub process: i64,
}

/// The run holding a running call's lease, as last read.
#[derive(Clone, Debug, PartialEq, Eq, FromQueryResult)]
pub struct Holder {
    pub lease_owner: Option<String>,
    pub lease_process: Option<i64>,
    pub lease_until: Option<DateTime<Utc>>,
}

/// The lease on a call as it stands.
pub async fn holder(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<Holder>, DbErr> {
    lease_columns(call::Entity::find_by_id(id))
        .into_model::<Holder>()
        .one(db)
        .await
}

fn lease_columns(select: sea_orm::Select<call::Entity>) -> sea_orm::Select<call::Entity> {
    select
        .select_only()
        .expr_as(Expr::col(lease_owner()), "lease_owner")
        .expr_as(Expr::col(lease_process()), "lease_process")
        .expr_as(Expr::col(lease_until()), "lease_until")
}

/// A running coaching call and its lease, for the takeover loop.
#[derive(Clone, Debug, FromQueryResult)]
pub struct Running {
    pub id: Uuid,
    pub request_id: String,
    #[sea_orm(nested)]
    pub holder: Holder,
}

/// Running coaching calls whose lease is not held by `process` (at most `limit`, oldest first):
/// the candidates for a takeover, once their holder is known dead or their time lease lapsed.
pub async fn running_elsewhere(
    db: &DatabaseConnection,
    process: i64,
    limit: u64,
) -> Result<Vec<Running>, DbErr> {
    use sea_orm::QueryOrder;
    let elsewhere = Condition::any()
        .add(Expr::col(lease_process()).is_null())
        .add(Expr::col(lease_process()).ne(process));
    lease_columns(call::Entity::find())
        .column(call::Column::Id)
        .column(call::Column::RequestId)
        .filter(call::Column::Status.eq(CallStatus::Running))
        .filter(call::Column::Kind.eq(CallKind::Coaching))
        .filter(elsewhere)
        .order_by_asc(call::Column::UpdatedAt)
        .limit(limit)
        .into_model::<Running>()
        .all(db)
        .await
}

/// Renews `owner`'s lease on a running call. False when the lease is no longer its own (it
/// was taken over, or the call ended).
pub async fn renew_lease(db: &DatabaseConnection, id: Uuid, owner: Uuid) -> Result<bool, DbErr> {
    let now = clock::wall();
    let updated = call::Entity::update_many()
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .filter(call::Column::Id.eq(id))
        .filter(call::Column::Status.eq(CallStatus::Running))
        .filter(Expr::col(lease_owner()).eq(owner.to_string()))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// How many runs one renewal statement names: far below every backend's limit on bound values
/// (SQLite 32,766, PostgreSQL 65,535), and small enough that one statement is brief.
const RENEW_CHUNK: usize = 1000;

/// Renews the lease of every run in `runs` that still holds its running call, a statement per
/// thousand runs: a process renews all its runs at once instead of each run on its own timer,
/// which at thousands of calls in flight was thousands of writes a second (issue 31). Returns
/// the runs renewed; a run missing from the answer no longer holds its call (taken over, or
/// the call ended), which is what `renew_lease` answers false for one run.
pub async fn renew_leases(db: &DatabaseConnection, runs: &[Uuid]) -> Result<HashSet<Uuid>, DbErr> {
    let until = clock::wall() + LEASE;
    let mut renewed = HashSet::with_capacity(runs.len());
    for chunk in runs.chunks(RENEW_CHUNK) {
        let mut update = call::Entity::update_many()
            .col_expr(lease_until(), Expr::value(until))
            .filter(call::Column::Status.eq(CallStatus::Running))
            .filter(Expr::col(lease_owner()).is_in(chunk.iter().map(Uuid::to_string)))
            .into_query();
        // Only the owner back, not the rows: the answer is read for which runs still hold.
        update.returning(Query::returning().column(lease_owner()));
        for row in db.query_all(&update).await? {
            let owner: String = row.try_get("", "lease_owner")?;
            if let Ok(run) = owner.parse() {
                renewed.insert(run);
            }
        }
    }
    Ok(renewed)
}

/// Moves the calls held by `runs` (the runs alive in this process) to `process`, the liveness
/// key it holds after taking its lock again (`liveness::Liveness::reclaim`), with a fresh time
/// lease. A run whose call another process took over meanwhile no longer owns it and is left
/// alone (it cannot store an outcome either: `Finisher`). Returns how many moved.
pub async fn adopt(db: &DatabaseConnection, runs: &[Uuid], process: i64) -> Result<u64, DbErr> {
    if runs.is_empty() {
        return Ok(0);
    }
    let now = crate::clock::wall();
    let updated = call::Entity::update_many()
        .col_expr(lease_process(), Expr::value(process))
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .filter(call::Column::Status.eq(CallStatus::Running))
        .filter(Expr::col(lease_owner()).is_in(runs.iter().map(Uuid::to_string)))
        .exec(db)
        .await?;
    Ok(updated.rows_affected)
}

/// Who stores a call's outcome.
#[derive(Clone, Copy, Debug)]
pub enum Finisher {
    /// The run holding the call's lease: it may finish the call only while it still holds it,
    /// so a run that was taken over cannot overwrite the run that took it.
    Run(Uuid),
    /// Something that holds no lease: a review request's first outcome, or the api.
    Unleased,
}
