//! Call state shared by the API and the worker. Every write here is safe to repeat: a job that
//! runs twice (at-least-once delivery) stores one result.

use super::entities::{call, model_call, result};
use super::write::{Done, Exec};
use crate::clock;
use crate::ledger::status::CallStatus;
use chrono::{SubsecRound, Utc};
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, Insert,
    QueryFilter,
    sea_query::{Expr, OnConflict},
};
use serde_json::Value;
use uuid::Uuid;

mod lease;
mod pg;
pub use lease::{
    Finisher, Holder, LEASE, LEASE_RENEW_EVERY, Runner, Running, Start, adopt, holder, renew_lease,
    running_elsewhere, start_attempt, start_settled, take_over,
};
pub use pg::settled as settled_in_one_statement;

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
    // At the database's precision (microseconds): the result handed to a waiter with the
    // completion is then the one a later read returns.
    let now = clock::wall().trunc_subsecs(6);
    let stored = result::Model {
        call_id,
        body,
        input_tokens: i64::try_from(input_tokens).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(output_tokens).unwrap_or(i64::MAX),
        model_calls: i32::try_from(model_calls).unwrap_or(i32::MAX),
        created_at: now,
    };
    let written = if db.get_database_backend() == DbBackend::Postgres {
        let answer = answer.map(|rec| pg::Answer {
            run: rec.run,
            seq: rec.seq,
            outcome: rec.outcome,
            tokens: (
                i64::try_from(rec.tokens.0).unwrap_or(i64::MAX),
                i64::try_from(rec.tokens.1).unwrap_or(i64::MAX),
            ),
            http_attempts: i32::try_from(rec.http_attempts).unwrap_or(i32::MAX),
        });
        pg::complete(db, by, &stored, answer, now).await?
    } else {
        complete_in_transaction(db, call_id, by, &stored, answer, now).await?
    };
    match written {
        Finished::NotHolder => Ok(None),
        Finished::Stored => Ok(Some(stored)),
        // A re-run raced a first run to the finish: the first result stands, and is read back.
        Finished::Existing => load_result(db, call_id)
            .await?
            .ok_or_else(|| DbErr::Custom("a result was neither stored nor found".into()))
            .map(Some),
    }
}

/// `complete`'s writes as a transaction (SQLite runs it on the caller's thread).
async fn complete_in_transaction(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    stored: &result::Model,
    answer: Option<ModelCallRecord>,
    now: chrono::DateTime<Utc>,
) -> Result<Finished, DbErr> {
    let finish = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(CallStatus::Completed))
        .col_expr(call::Column::Error, Expr::value(Option::<String>::None))
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(call::Column::CompletedAt, Expr::value(Some(now)))
        .filter(call::Column::Id.eq(call_id))
        .filter(by.guard());
    let store = result::Entity::insert(result::ActiveModel::from(stored.clone())).on_conflict(
        OnConflict::column(result::Column::CallId)
            .do_nothing()
            .to_owned(),
    );
    let answer = answer.map(|rec| model_call_insert(call_id, rec));
    crate::transaction!(db, async move |e| {
        if e.exec(&finish).await? == 0 {
            return Ok(Done::Rollback(Finished::NotHolder));
        }
        let inserted = e.exec(&store).await?;
        if let Some(answer) = &answer {
            e.exec(answer).await?;
        }
        Ok(Done::Commit(if inserted == 1 {
            Finished::Stored
        } else {
            Finished::Existing
        }))
    })
}

/// What `complete`'s transaction did.
enum Finished {
    /// The run no longer holds the call: nothing was written.
    NotHolder,
    /// This run's result is the call's.
    Stored,
    /// The call already had a result.
    Existing,
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
        .col_expr(call::Column::Status, Expr::value(CallStatus::Failed))
        .col_expr(call::Column::Error, Expr::value(Some(error.to_owned())))
        .col_expr(call::Column::UpdatedAt, Expr::value(clock::wall()))
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.ne(CallStatus::Completed))
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
    model_call_insert(call_id, rec)
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// The insert recording one model answer; a duplicate (same call, run and sequence) keeps the
/// first.
fn model_call_insert(call_id: Uuid, rec: ModelCallRecord) -> Insert<model_call::ActiveModel> {
    let row = model_call::ActiveModel {
        call_id: Set(call_id),
        run: Set(rec.run),
        seq: Set(rec.seq),
        outcome: Set(rec.outcome),
        input_tokens: Set(i64::try_from(rec.tokens.0).unwrap_or(i64::MAX)),
        output_tokens: Set(i64::try_from(rec.tokens.1).unwrap_or(i64::MAX)),
        http_attempts: Set(i32::try_from(rec.http_attempts).unwrap_or(i32::MAX)),
        created_at: Set(clock::wall()),
    };
    let keep_first = OnConflict::columns([
        model_call::Column::CallId,
        model_call::Column::Run,
        model_call::Column::Seq,
    ])
    .do_nothing()
    .to_owned();
    model_call::Entity::insert(row).on_conflict(keep_first)
}
