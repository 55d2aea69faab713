//! Call state shared by the API and the worker. Every write here is safe to repeat: a job that
//! runs twice (at-least-once delivery) stores one result.

use super::entities::{call, model_call, result};
use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, TransactionTrait, TryInsertResult, sea_query::Expr,
};
use serde_json::Value;
use uuid::Uuid;

mod lease;
pub use lease::{
    Finisher, Holder, LEASE, LEASE_RENEW_EVERY, Runner, Running, Start, holder, renew_lease,
    running_elsewhere, start_attempt, take_over,
};

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

/// Stores the result and completes the call in one transaction, with the model answer it was
/// made from when that is not on record yet (`answer`). If a result already exists (a re-run
/// raced a first run to the finish), the first one stands. Returns the call's stored result, or
/// None (nothing stored) when `by` is a run that no longer holds the call.
pub async fn complete(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    body: Value,
    (input_tokens, output_tokens): (u64, u64),
    model_calls: u32,
    answer: Option<ModelCallRecord>,
) -> Result<Option<result::Model>, DbErr> {
    let now = Utc::now();
    let txn = db.begin().await?;
    let moved = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(status::COMPLETED))
        .col_expr(call::Column::Error, Expr::value(Option::<String>::None))
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(call::Column::CompletedAt, Expr::value(Some(now)))
        .filter(call::Column::Id.eq(call_id))
        .filter(by.guard())
        .exec(&txn)
        .await?;
    if moved.rows_affected == 0 {
        txn.rollback().await?;
        return Ok(None);
    }
    let stored = result::Model {
        call_id,
        body,
        input_tokens: i64::try_from(input_tokens).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(output_tokens).unwrap_or(i64::MAX),
        model_calls: i32::try_from(model_calls).unwrap_or(i32::MAX),
        created_at: now,
    };
    let inserted = result::Entity::insert(result::ActiveModel::from(stored.clone()))
        .on_conflict_do_nothing_on([result::Column::CallId])
        .exec_without_returning(&txn)
        .await?;
    if let Some(answer) = answer {
        store_model_call(&txn, call_id, answer).await?;
    }
    let stored = if matches!(inserted, TryInsertResult::Inserted(1)) {
        stored
    } else {
        load_result(&txn, call_id)
            .await?
            .ok_or_else(|| DbErr::Custom("a result was neither stored nor found".into()))?
    };
    txn.commit().await?;
    Ok(Some(stored))
}

/// Records a failure after settlement: the payment stays credited to this call, and an
/// identical retry runs the work again for free. False when `by` is a run that no longer
/// holds the call (or the call already completed).
pub async fn fail(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    error: &str,
) -> Result<bool, DbErr> {
    let updated = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(status::FAILED))
        .col_expr(call::Column::Error, Expr::value(Some(error.to_owned())))
        .col_expr(call::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.ne(status::COMPLETED))
        .filter(by.guard())
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
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

/// One model answer as stored: for the run and sequence of its call.
#[derive(Clone, Debug)]
pub struct ModelCallRecord {
    pub run: i32,
    pub seq: i32,
    pub outcome: Value,
    pub tokens: (u64, u64),
    pub http_attempts: u32,
}

/// Records one model answer. A duplicate (same call and sequence) keeps the first.
pub async fn record_model_call(
    db: &impl ConnectionTrait,
    call_id: Uuid,
    run: i32,
    seq: i32,
    outcome: Value,
    tokens: (u64, u64),
    http_attempts: u32,
) -> Result<(), DbErr> {
    let rec = ModelCallRecord {
        run,
        seq,
        outcome,
        tokens,
        http_attempts,
    };
    store_model_call(db, call_id, rec).await
}

pub async fn store_model_call(
    db: &impl ConnectionTrait,
    call_id: Uuid,
    rec: ModelCallRecord,
) -> Result<(), DbErr> {
    let row = model_call::ActiveModel {
        call_id: Set(call_id),
        run: Set(rec.run),
        seq: Set(rec.seq),
        outcome: Set(rec.outcome),
        input_tokens: Set(i64::try_from(rec.tokens.0).unwrap_or(i64::MAX)),
        output_tokens: Set(i64::try_from(rec.tokens.1).unwrap_or(i64::MAX)),
        http_attempts: Set(i32::try_from(rec.http_attempts).unwrap_or(i32::MAX)),
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
