//! The durable half of a paid request: claim the idempotency scope, reserve the authorization
//! `(payer, nonce)`, and record the call and its receipt, in one transaction (`claim`). Then
//! settlement outcomes are written back (`outcome`), and a failed paid call may be reopened.

mod claim;
mod claim_pg;
mod outcome;
mod settler_nonce;
mod watched;

pub use claim::claim;
pub use outcome::{Recorded, record_outcome, record_outcome_starting};
pub use settler_nonce::SharedNonces;
pub use watched::{Watched, record_standing};

use chrono::{DateTime, Utc};
use grove_common::{
    catalog::{CoachId, ModeId},
    db::entities::{call, idempotency, payment},
    ledger::{CallKind, CallStatus, PaymentStatus},
};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait, QueryFilter, sea_query::Query,
};
use serde_json::Value;
use uuid::Uuid;

/// A new paid call, before it is written.
pub struct NewCall {
    pub kind: CallKind,
    pub agent: Option<CoachId>,
    pub mode: Option<ModeId>,
    pub payer: String,
    pub request_hash: String,
    pub request: Value,
    pub request_id: String,
}

/// The authorization that pays for it.
pub struct NewPayment {
    pub nonce: String,
    pub amount: String,
    pub network: String,
    pub x402_version: i32,
    /// The exact `/settle` body, so reconciliation can re-post the identical payload.
    pub settle_request: Value,
    /// The authorization's `validBefore`, unix seconds.
    pub valid_before: i64,
}

/// Calls whose scope another request may take once its window is over (`CallStatus::FINISHED`).
const FINISHED: [CallStatus; 2] = CallStatus::FINISHED;

/// What a claim's writes found (`claim::write`, `claim_pg::write`).
enum Written {
    Claimed,
    ScopeHeld,
    NonceUsed,
}

pub enum Claim {
    /// This request owns the scope: its call is recorded and its payment reserved.
    New(Box<call::Model>),
    /// An earlier request owns the scope (replay, wait, or refuse a different body).
    Existing { call_id: Uuid, request_hash: String },
    /// The authorization already paid for another request.
    NonceUsed,
}

pub async fn payment_for(
    db: &DatabaseConnection,
    call_id: Uuid,
) -> Result<Option<payment::Model>, DbErr> {
    payment::Entity::find()
        .filter(payment::Column::CallId.eq(call_id))
        .one(db)
        .await
}

/// A failed call's identical retry: back to pending, exactly once among concurrent retries, and
/// only when its payment settled: the check is in the same statement, so a call whose settlement
/// was refused (or is still unknown) can never be re-run for free.
pub async fn reopen_failed(
    db: &DatabaseConnection,
    call_id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let paid = Query::select()
        .column(payment::Column::CallId)
        .from(payment::Entity)
        .and_where(payment::Column::CallId.eq(call_id))
        .and_where(payment::Column::Status.is_in(PaymentStatus::PAID))
        .to_owned();
    let res = call::Entity::update_many()
        .col_expr(call::Column::Status, CallStatus::Pending.into())
        .col_expr(
            call::Column::Runs,
            sea_orm::sea_query::Expr::col(call::Column::Runs).add(1),
        )
        .col_expr(call::Column::UpdatedAt, now.into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.eq(CallStatus::Failed))
        .filter(call::Column::Id.in_subquery(paid))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// Whether a request is a repeat: its authorization is already reserved (a payment retry), or its
/// idempotency scope is held by a call inside its window (a paid repeat, perhaps re-signed).
pub async fn is_known(
    db: &DatabaseConnection,
    payer: &str,
    nonce: &str,
    scope: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let reserved = payment::Entity::find()
        .filter(payment::Column::Payer.eq(payer))
        .filter(payment::Column::Nonce.eq(nonce))
        .one(db)
        .await?
        .is_some();
    if reserved {
        return Ok(true);
    }
    Ok(idempotency::Entity::find_by_id(scope.to_owned())
        .filter(idempotency::Column::ExpiresAt.gt(now))
        .one(db)
        .await?
        .is_some())
}

/// The reason a used authorization's settlement was refused, if it was: a repeat that arrives
/// after the refusal released the scope gets the 402 the original got, not `payment_already_used`.
pub async fn refusal_of(
    db: &DatabaseConnection,
    payer: &str,
    nonce: &str,
) -> Result<Option<String>, DbErr> {
    Ok(payment::Entity::find()
        .filter(payment::Column::Payer.eq(payer))
        .filter(payment::Column::Nonce.eq(nonce))
        .filter(payment::Column::Status.eq(PaymentStatus::Refused))
        .one(db)
        .await?
        .map(|p| p.error.unwrap_or_else(|| "settlement_refused".into())))
}
