//! Calls as read by the API and the worker, their model answers, and their leases. A call's
//! state moves only through the ledger (`crate::ledger`). Every write here is safe to repeat: a
//! job that runs twice (at-least-once delivery) records one answer.

use super::entities::{call, model_call, result};
use crate::clock;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, Insert, QueryFilter,
    sea_query::OnConflict,
};
use serde_json::Value;
use uuid::Uuid;

mod lease;
pub use lease::{
    Finisher, Holder, LEASE, LEASE_RENEW_EVERY, Runner, Running, adopt, holder, renew_lease,
    renew_leases, running_elsewhere,
};
pub(crate) use lease::{lease_owner, lease_process, lease_until};

pub async fn load(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<call::Model>, DbErr> {
    call::Entity::find_by_id(id).one(db).await
}

pub async fn load_result(
    db: &impl ConnectionTrait,
    call_id: Uuid,
) -> Result<Option<result::Model>, DbErr> {
    result::Entity::find_by_id(call_id).one(db).await
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
pub(crate) fn model_call_insert(
    call_id: Uuid,
    rec: ModelCallRecord,
) -> Insert<model_call::ActiveModel> {
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
