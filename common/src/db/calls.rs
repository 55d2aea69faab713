//! Call state shared by the API and the worker. Every write here is safe to repeat: a job that
//! runs twice (at-least-once delivery) stores one result.

use super::entities::{call, model_call, result};
use chrono::Utc;
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait,
    QueryFilter, TransactionTrait,
    sea_query::{Alias, Expr},
};
use serde_json::Value;
use uuid::Uuid;

pub mod status {
    /// Paid for, but the settlement's outcome is not known yet: must not run (issue 7).
    pub const SETTLING: &str = "settling";
    /// The settlement was refused: nothing was bought, nothing may run, nothing is free.
    pub const UNPAID: &str = "unpaid";
    pub const PENDING: &str = "pending";
    pub const RUNNING: &str = "running";
    pub const COMPLETED: &str = "completed";
    pub const FAILED: &str = "failed";
}

pub async fn load(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<call::Model>, DbErr> {
    call::Entity::find_by_id(id).one(db).await
}

pub async fn load_result(
    db: &impl ConnectionTrait,
    call_id: Uuid,
) -> Result<Option<result::Model>, DbErr> {
    result::Entity::find_by_id(call_id).one(db).await
}

/// How long a started run holds its call without renewing. The run renews every
/// `LEASE_RENEW_EVERY` while it works, so only a run that died (or stalled this long) loses it.
pub const LEASE: chrono::TimeDelta = chrono::TimeDelta::seconds(6);
pub const LEASE_RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The lease columns (migration 4). They are not on the entity: only the functions below read
/// or write them, and every call row is created without a lease.
fn lease_until() -> Alias {
    Alias::new("lease_until")
}

fn lease_owner() -> Alias {
    Alias::new("lease_owner")
}

/// What an attempt to start work on a call found.
#[derive(Debug)]
pub enum Start {
    /// This run holds the call's lease (until it lapses or the call ends): do the work.
    Started(Box<call::Model>),
    /// Another run holds a live lease: it does the work.
    Busy,
    /// Nothing to run: the call is in this status (completed, failed, or not yet, or never,
    /// runnable: `settling`, `unpaid`).
    Idle(String),
    /// No such call.
    Missing,
}

/// `pending → running` (or a takeover of a `running` call whose lease lapsed), in one
/// statement, taking the lease for `owner`; one more attempt. Only `pending` calls start: the
/// API reopens a failed call to `pending` for its free re-run, and a call whose payment is
/// unsettled (`settling`) or refused (`unpaid`) never does.
pub async fn start_attempt(db: &DatabaseConnection, id: Uuid, owner: Uuid) -> Result<Start, DbErr> {
    let now = Utc::now();
    let lapsed = Condition::any()
        .add(Expr::col(lease_until()).is_null())
        .add(Expr::col(lease_until()).lt(now));
    let runnable = Condition::any()
        .add(call::Column::Status.eq(status::PENDING))
        .add(
            Condition::all()
                .add(call::Column::Status.eq(status::RUNNING))
                .add(lapsed),
        );
    let updated = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(status::RUNNING))
        .col_expr(
            call::Column::Attempts,
            Expr::col(call::Column::Attempts).add(1),
        )
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .col_expr(lease_owner(), Expr::value(owner.to_string()))
        .filter(call::Column::Id.eq(id))
        .filter(runnable)
        .exec(db)
        .await?;
    Ok(match load(db, id).await? {
        None => Start::Missing,
        Some(c) if updated.rows_affected == 1 => Start::Started(Box::new(c)),
        Some(c) if c.status == status::RUNNING => Start::Busy,
        Some(c) => Start::Idle(c.status),
    })
}

/// Renews `owner`'s lease on a running call. False when the lease is no longer its own (it
/// lapsed and another run took the call over, or the call ended).
pub async fn renew_lease(db: &DatabaseConnection, id: Uuid, owner: Uuid) -> Result<bool, DbErr> {
    let now = Utc::now();
    let updated = call::Entity::update_many()
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .filter(call::Column::Id.eq(id))
        .filter(call::Column::Status.eq(status::RUNNING))
        .filter(Expr::col(lease_owner()).eq(owner.to_string()))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// Stores the result and completes the call in one transaction. If a result already exists
/// (a re-run raced a first run to the finish), the first one stands.
pub async fn complete(
    db: &DatabaseConnection,
    call_id: Uuid,
    body: Value,
    (input_tokens, output_tokens): (u64, u64),
    model_calls: u32,
) -> Result<(), DbErr> {
    let now = Utc::now();
    let txn = db.begin().await?;
    let row = result::ActiveModel {
        call_id: Set(call_id),
        body: Set(body),
        input_tokens: Set(i64::try_from(input_tokens).unwrap_or(i64::MAX)),
        output_tokens: Set(i64::try_from(output_tokens).unwrap_or(i64::MAX)),
        model_calls: Set(i32::try_from(model_calls).unwrap_or(i32::MAX)),
        created_at: Set(now),
    };
    result::Entity::insert(row)
        .on_conflict_do_nothing_on([result::Column::CallId])
        .exec(&txn)
        .await?;
    call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(status::COMPLETED))
        .col_expr(call::Column::Error, Expr::value(Option::<String>::None))
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(call::Column::CompletedAt, Expr::value(Some(now)))
        .filter(call::Column::Id.eq(call_id))
        .exec(&txn)
        .await?;
    txn.commit().await
}

/// Records a failure after settlement: the payment stays credited to this call, and an
/// identical retry runs the work again for free.
pub async fn fail(db: &DatabaseConnection, call_id: Uuid, error: &str) -> Result<(), DbErr> {
    call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(status::FAILED))
        .col_expr(call::Column::Error, Expr::value(Some(error.to_owned())))
        .col_expr(call::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.ne(status::COMPLETED))
        .exec(db)
        .await?;
    Ok(())
}

/// Model answers already received in this run of the call, in order.
pub async fn model_calls(
    db: &impl ConnectionTrait,
    call_id: Uuid,
    run: i32,
) -> Result<Vec<model_call::Model>, DbErr> {
    use sea_orm::QueryOrder;
    model_call::Entity::find()
        .filter(model_call::Column::CallId.eq(call_id))
        .filter(model_call::Column::Run.eq(run))
        .order_by_asc(model_call::Column::Seq)
        .all(db)
        .await
}

/// Records one model answer. A duplicate (same call and sequence) keeps the first.
pub async fn record_model_call(
    db: &impl ConnectionTrait,
    call_id: Uuid,
    run: i32,
    seq: i32,
    outcome: Value,
    (input_tokens, output_tokens): (u64, u64),
    http_attempts: u32,
) -> Result<(), DbErr> {
    let row = model_call::ActiveModel {
        call_id: Set(call_id),
        run: Set(run),
        seq: Set(seq),
        outcome: Set(outcome),
        input_tokens: Set(i64::try_from(input_tokens).unwrap_or(i64::MAX)),
        output_tokens: Set(i64::try_from(output_tokens).unwrap_or(i64::MAX)),
        http_attempts: Set(i32::try_from(http_attempts).unwrap_or(i32::MAX)),
        created_at: Set(Utc::now()),
    };
    model_call::Entity::insert(row)
        .on_conflict_do_nothing_on([
            model_call::Column::CallId,
            model_call::Column::Run,
            model_call::Column::Seq,
        ])
        .exec(db)
        .await?;
    Ok(())
}
