//! A call's lease: which run of which process holds it while it works, how it is started,
//! renewed and taken over when its process died or its run stalled, and who may store its
//! outcome (`Finisher`).

use super::load;
use crate::clock;
use crate::db::entities::call;
use crate::ledger::status::{CallKind, CallStatus};
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait,
    FromQueryResult, QueryFilter, QuerySelect, UpdateMany,
    sea_query::{Alias, Expr},
};
use uuid::Uuid;

/// How long a started run holds its call without renewing: the fallback for a process that is
/// alive (its liveness lock held, `super::liveness`) but stalled. A run whose process died is
/// taken over at once through the liveness lock, so this can be long enough never to lapse
/// falsely on a loaded machine. The run renews every `LEASE_RENEW_EVERY` while it works.
pub const LEASE: chrono::TimeDelta = chrono::TimeDelta::seconds(30);
pub const LEASE_RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The lease columns (migrations 4 and 7). They are not on the entity: only the functions below
/// read or write them, and every call row is created without a lease.
fn lease_until() -> Alias {
    Alias::new("lease_until")
}

/// The run holding the lease.
fn lease_owner() -> Alias {
    Alias::new("lease_owner")
}

/// The process that run lives in (its liveness key).
fn lease_process() -> Alias {
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

/// What an attempt to start work on a call found.
#[derive(Debug)]
pub enum Start {
    /// This run holds the call's lease (until it lapses or the call ends): do the work.
    Started(Box<call::Model>),
    /// Another run holds a live time lease: it does the work, unless its process is gone
    /// (then `take_over`).
    Busy(Holder),
    /// Nothing to run: the call is in this status (completed, failed, or not yet, or never,
    /// runnable: `settling`, `unpaid`).
    Idle(CallStatus),
    /// No such call.
    Missing,
}

/// `pending → running` (or a takeover of a `running` call whose time lease lapsed), in one
/// statement, taking the lease for `runner`; one more attempt. Only `pending` calls start: the
/// API reopens a failed call to `pending` for its free re-run, and a call whose payment is
/// unsettled (`settling`) or refused (`unpaid`) never does.
pub async fn start_attempt(
    db: &DatabaseConnection,
    id: Uuid,
    runner: Runner,
) -> Result<Start, DbErr> {
    let now = clock::wall();
    let lapsed = Condition::any()
        .add(Expr::col(lease_until()).is_null())
        .add(Expr::col(lease_until()).lt(now));
    let runnable = Condition::any()
        .add(call::Column::Status.eq(CallStatus::Pending))
        .add(
            Condition::all()
                .add(call::Column::Status.eq(CallStatus::Running))
                .add(lapsed),
        );
    take(db, id, runner, runnable, now).await
}

/// Takes over a `running` call from `from`, a run whose process is known to be dead. A compare
/// and set on the lease as read: of several processes that saw the same dead run, one wins.
pub async fn take_over(
    db: &DatabaseConnection,
    id: Uuid,
    from: &Holder,
    runner: Runner,
) -> Result<Start, DbErr> {
    let same = |col: Alias, value: Option<sea_orm::Value>| match value {
        Some(v) => Expr::col(col).eq(v),
        None => Expr::col(col).is_null(),
    };
    let held_by_it = Condition::all()
        .add(call::Column::Status.eq(CallStatus::Running))
        .add(same(
            lease_owner(),
            from.lease_owner.clone().map(Into::into),
        ))
        .add(same(lease_process(), from.lease_process.map(Into::into)));
    take(db, id, runner, held_by_it, clock::wall()).await
}

/// `settling → running` for `runner`, one more attempt: the run of a call whose settlement was
/// just learned, started in the same transaction that records it (`UPDATE … RETURNING` for
/// `write::Exec::update_calls`). The embedded api starts its in-process worker's run there, so a
/// paid call has one write transaction fewer (issue 12); the worker then does the work without
/// starting it again (`jobs::Started`).
/// Leases run on the real clock, as every lease does (`start_attempt`).
pub fn start_settled(id: Uuid, runner: Runner) -> UpdateMany<call::Entity> {
    starting(id, runner, clock::wall()).filter(call::Column::Status.eq(CallStatus::Settling))
}

/// The update that gives `runner` the lease on call `id`, for the caller to add its condition.
fn starting(id: Uuid, runner: Runner, now: DateTime<Utc>) -> UpdateMany<call::Entity> {
    call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(CallStatus::Running))
        .col_expr(
            call::Column::Attempts,
            Expr::col(call::Column::Attempts).add(1),
        )
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .col_expr(lease_owner(), Expr::value(runner.run.to_string()))
        .col_expr(lease_process(), Expr::value(runner.process))
        .filter(call::Column::Id.eq(id))
}

async fn take(
    db: &DatabaseConnection,
    id: Uuid,
    runner: Runner,
    condition: Condition,
    now: DateTime<Utc>,
) -> Result<Start, DbErr> {
    let update = starting(id, runner, now).filter(condition);
    // RETURNING: the started call comes back from the update itself, one round trip instead of
    // two on every run's start; on SQLite it runs where the paid path's writes do (issue 12).
    let updated = crate::db::write::update_calls(db, update).await?;
    if let Some(started) = updated.into_iter().next() {
        return Ok(Start::Started(Box::new(started)));
    }
    Ok(match load(db, id).await? {
        None => Start::Missing,
        Some(c) if c.status == CallStatus::Running => match holder(db, id).await? {
            Some(h) => Start::Busy(h),
            None => Start::Missing,
        },
        Some(c) => Start::Idle(c.status),
    })
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

impl Finisher {
    pub(super) fn guard(self) -> Condition {
        match self {
            Finisher::Run(owner) => Condition::all()
                .add(call::Column::Status.eq(CallStatus::Running))
                .add(Expr::col(lease_owner()).eq(owner.to_string())),
            Finisher::Unleased => Condition::all(),
        }
    }
}
