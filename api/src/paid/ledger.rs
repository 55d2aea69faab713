//! The durable half of a paid request: claim the idempotency scope, reserve the authorization
//! `(payer, nonce)`, and record the call and its receipt, in one transaction. Then settlement
//! outcomes are written back here.

use super::idempotency::Scope;
use crate::x402::settle::SettleOutcome;
use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        calls::status,
        entities::{call, idempotency, payment, receipt},
        payments::status as pay_status,
    },
    receipt as receipts,
};
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, ExprTrait, QueryFilter, SqlErr,
    TransactionTrait,
    sea_query::{Expr, OnConflict, Query},
};
use serde_json::Value;
use uuid::Uuid;

/// A new paid call, before it is written.
pub struct NewCall {
    pub kind: &'static str,
    pub agent: Option<String>,
    pub mode: Option<String>,
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

pub enum Claim {
    /// This request owns the scope: its call is recorded and its payment reserved.
    New(Box<call::Model>),
    /// An earlier request owns the scope (replay, wait, or refuse a different body).
    Existing { call_id: Uuid, request_hash: String },
    /// The authorization already paid for another request.
    NonceUsed,
}

fn is_unique_violation(e: &DbErr) -> bool {
    matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_)))
}

pub async fn find_scope(
    db: &DatabaseConnection,
    scope: &str,
    now: DateTime<Utc>,
) -> Result<Option<idempotency::Model>, DbErr> {
    idempotency::Entity::find_by_id(scope.to_owned())
        .filter(idempotency::Column::ExpiresAt.gt(now))
        .one(db)
        .await
}

/// The record holding `scope`, expired or not: a scope whose call has not finished is held past
/// its window (see `claim`).
async fn holder(db: &DatabaseConnection, scope: &str) -> Result<Option<idempotency::Model>, DbErr> {
    idempotency::Entity::find_by_id(scope.to_owned())
        .one(db)
        .await
}

/// Calls whose scope another request may take once its window is over: finished with a result
/// delivered, or proven unpaid. Never one whose payment is reserved or unknown (a second payment
/// could be charged for one piece of work) nor a paid call that has not delivered (its identical
/// retry is owed the result, or a free re-run).
const FINISHED: [&str; 2] = [status::COMPLETED, status::UNPAID];

fn existing(record: idempotency::Model) -> Claim {
    Claim::Existing {
        call_id: record.call_id,
        request_hash: record.request_hash,
    }
}

/// Claims `scope` for a new call paid by `pay`, or reports who already holds it, in one
/// transaction: the scope, the payment reservation, the call and its receipt. `window_start` is
/// the service clock's reading, which measures the idempotency windows (tests move it); the
/// records themselves carry wall-clock times.
pub async fn claim(
    db: &DatabaseConnection,
    scope: &Scope,
    call: NewCall,
    pay: NewPayment,
    window_start: DateTime<Utc>,
) -> Result<Claim, DbErr> {
    if let Some(record) = find_scope(db, &scope.key, window_start).await? {
        return Ok(existing(record));
    }
    let now = Utc::now();
    let call_id = Uuid::now_v7();
    let receipt_id = receipts::new_id();
    let window = chrono::Duration::from_std(scope.window).unwrap_or(chrono::Duration::hours(24));
    let txn = db.begin().await?;
    // The scope first: of two concurrent identical requests, the loser stops here rather than
    // on the shared nonce below. An expired record of a finished call answers nothing any more,
    // so the insert takes its place in the same statement (no separate delete on the paid path);
    // the call's state is checked in that statement too, so a window cannot lapse under a call
    // whose settlement is still being reconciled.
    let scope_row = idempotency::ActiveModel {
        scope: Set(scope.key.clone()),
        call_id: Set(call_id),
        request_hash: Set(call.request_hash.clone()),
        expires_at: Set(window_start + window),
        created_at: Set(window_start),
    };
    let replace_if_expired = OnConflict::column(idempotency::Column::Scope)
        .update_columns([
            idempotency::Column::CallId,
            idempotency::Column::RequestHash,
            idempotency::Column::ExpiresAt,
            idempotency::Column::CreatedAt,
        ])
        .action_and_where(
            Expr::col((idempotency::Entity, idempotency::Column::ExpiresAt))
                .lte(window_start)
                .and(
                    Expr::col((idempotency::Entity, idempotency::Column::CallId)).in_subquery(
                        Query::select()
                            .column(call::Column::Id)
                            .from(call::Entity)
                            .and_where(call::Column::Status.is_in(FINISHED))
                            .to_owned(),
                    ),
                ),
        )
        .to_owned();
    let claimed = idempotency::Entity::insert(scope_row)
        .on_conflict(replace_if_expired)
        .exec_without_returning(&txn)
        .await?;
    if claimed == 0 {
        // A live record, or one whose call has not finished, holds the scope: wait for, replay or
        // refuse against its call.
        txn.rollback().await?;
        return match holder(db, &scope.key).await? {
            Some(record) => Ok(existing(record)),
            None => Err(DbErr::Custom(
                "idempotency scope held by a record that is not live".into(),
            )),
        };
    }
    let payment_row = payment::ActiveModel {
        id: Set(Uuid::now_v7()),
        call_id: Set(call_id),
        payer: Set(call.payer.clone()),
        nonce: Set(pay.nonce),
        amount: Set(pay.amount),
        network: Set(pay.network),
        x402_version: Set(pay.x402_version),
        status: Set(pay_status::RESERVED.into()),
        transaction: Set(None),
        error: Set(None),
        settle_request: Set(Some(pay.settle_request)),
        valid_before: Set(Some(pay.valid_before)),
        checks: Set(0),
        next_check_at: Set(None),
        sent_tx: Set(None),
        sent_tx_raw: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    // A reservation that was released (nothing processed, not the payer's fault) is taken over
    // by this call; any other holder of the authorization makes it used.
    let take_released = OnConflict::columns([payment::Column::Payer, payment::Column::Nonce])
        .update_columns([
            payment::Column::CallId,
            payment::Column::Amount,
            payment::Column::Network,
            payment::Column::X402Version,
            payment::Column::Status,
            payment::Column::Transaction,
            payment::Column::Error,
            payment::Column::SettleRequest,
            payment::Column::ValidBefore,
            payment::Column::Checks,
            payment::Column::NextCheckAt,
            payment::Column::SentTx,
            payment::Column::SentTxRaw,
            payment::Column::UpdatedAt,
        ])
        .action_and_where(
            Expr::col((payment::Entity, payment::Column::Status)).eq(pay_status::RELEASED),
        )
        .to_owned();
    let reserved = payment::Entity::insert(payment_row)
        .on_conflict(take_released)
        .exec_without_returning(&txn)
        .await;
    match reserved {
        Ok(1) => {}
        Ok(_) => {
            txn.rollback().await?;
            return Ok(Claim::NonceUsed);
        }
        Err(e) => {
            txn.rollback().await?;
            return if is_unique_violation(&e) {
                Ok(Claim::NonceUsed)
            } else {
                Err(e)
            };
        }
    }
    let call_row = call::ActiveModel {
        id: Set(call_id),
        kind: Set(call.kind.to_owned()),
        agent: Set(call.agent),
        mode: Set(call.mode),
        payer: Set(call.payer),
        request_hash: Set(call.request_hash),
        request: Set(call.request),
        // Nothing may run until the settlement's outcome is known.
        status: Set(status::SETTLING.into()),
        attempts: Set(0),
        runs: Set(0),
        error: Set(None),
        receipt_id: Set(receipt_id.clone()),
        request_id: Set(call.request_id),
        created_at: Set(now),
        updated_at: Set(now),
        completed_at: Set(None),
    };
    let model = call::Entity::insert(call_row)
        .exec_with_returning(&txn)
        .await?;
    let receipt_row = receipt::ActiveModel {
        id: Set(receipt_id),
        call_id: Set(call_id),
        kind: Set(call.kind.to_owned()),
        created_at: Set(now),
        expires_at: Set(receipts::expires_at(now)),
    };
    receipt::Entity::insert(receipt_row).exec(&txn).await?;
    txn.commit().await?;
    Ok(Claim::New(Box::new(model)))
}

/// Writes a settlement's outcome, with what it means for the call, in one transaction:
/// settled → the call may run (`settling → pending`); refused → nothing was bought (`unpaid`, the
/// scope released so a new payment can buy it); unknown → the payment is handed to
/// reconciliation, due at `check_at`, and the call keeps waiting in `settling`.
/// Returns whether this write moved the call (false when reconciliation got there first).
pub async fn record_outcome(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    check_at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let now = Utc::now();
    let txn = db.begin().await?;
    let payment_update = payment::Entity::update_many()
        .col_expr(payment::Column::UpdatedAt, now.into())
        .filter(payment::Column::CallId.eq(call_id))
        .filter(payment::Column::Status.is_in([pay_status::RESERVED, pay_status::UNKNOWN]));
    let moved = match outcome {
        SettleOutcome::Settled { transaction, local } => {
            let paid = if *local {
                pay_status::UNSETTLED
            } else {
                pay_status::SETTLED
            };
            let tx = Some(transaction.clone()).filter(|t| !t.is_empty());
            let changed = payment_update
                .col_expr(payment::Column::Status, paid.into())
                .col_expr(payment::Column::Transaction, tx.into())
                .col_expr(payment::Column::Error, Option::<String>::None.into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                )
                .exec(&txn)
                .await?;
            changed.rows_affected == 1 && move_call(&txn, call_id, status::PENDING, None).await?
        }
        SettleOutcome::Refused { reason } => {
            // Refused credentials processed nothing: the reservation is handed back so that the
            // same authorization pays once the operator fixes them, and the call's answer is not
            // a 402 (`codes::settlement_unavailable`).
            let (paid, code) = if outcome.is_operator_fault() {
                (pay_status::RELEASED, "settlement_unavailable")
            } else {
                (pay_status::REFUSED, "settlement_failed")
            };
            let changed = payment_update
                .col_expr(payment::Column::Status, paid.into())
                .col_expr(payment::Column::Error, Some(reason.clone()).into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                )
                .exec(&txn)
                .await?;
            let moved = changed.rows_affected == 1
                && move_call(
                    &txn,
                    call_id,
                    status::UNPAID,
                    Some(format!("{code}:{reason}")),
                )
                .await?;
            if moved {
                idempotency::Entity::delete_many()
                    .filter(idempotency::Column::CallId.eq(call_id))
                    .exec(&txn)
                    .await?;
            }
            moved
        }
        SettleOutcome::Unknown { reason, sent } => {
            let mut update = payment_update
                .col_expr(payment::Column::Status, pay_status::UNKNOWN.into())
                .col_expr(payment::Column::Error, Some(reason.clone()).into())
                .col_expr(payment::Column::NextCheckAt, Some(check_at).into());
            if let Some(sent) = sent {
                update = update
                    .col_expr(payment::Column::SentTx, Some(sent.hash.clone()).into())
                    .col_expr(payment::Column::SentTxRaw, sent.raw.clone().into());
            }
            update.exec(&txn).await?;
            false
        }
    };
    txn.commit().await?;
    Ok(moved)
}

/// `settling → to`, only from `settling`: a settlement outcome decides a call once.
async fn move_call(
    txn: &sea_orm::DatabaseTransaction,
    call_id: Uuid,
    to: &str,
    error: Option<String>,
) -> Result<bool, DbErr> {
    let res = call::Entity::update_many()
        .col_expr(call::Column::Status, to.into())
        .col_expr(call::Column::Error, error.into())
        .col_expr(call::Column::UpdatedAt, Utc::now().into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.eq(status::SETTLING))
        .exec(txn)
        .await?;
    Ok(res.rows_affected == 1)
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
pub async fn reopen_failed(db: &DatabaseConnection, call_id: Uuid) -> Result<bool, DbErr> {
    let paid = Query::select()
        .column(payment::Column::CallId)
        .from(payment::Entity)
        .and_where(payment::Column::CallId.eq(call_id))
        .and_where(payment::Column::Status.is_in(pay_status::PAID))
        .to_owned();
    let res = call::Entity::update_many()
        .col_expr(call::Column::Status, status::PENDING.into())
        .col_expr(
            call::Column::Runs,
            sea_orm::sea_query::Expr::col(call::Column::Runs).add(1),
        )
        .col_expr(call::Column::UpdatedAt, Utc::now().into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.eq(status::FAILED))
        .filter(call::Column::Id.in_subquery(paid))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
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
        .filter(payment::Column::Status.eq(pay_status::REFUSED))
        .one(db)
        .await?
        .map(|p| p.error.unwrap_or_else(|| "settlement_refused".into())))
}
