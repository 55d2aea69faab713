//! Claiming a new paid call: the idempotency scope, the payment's reservation, the call and its
//! receipt, in one transaction, or who already holds the scope or the authorization.

use super::{Claim, FINISHED, NewCall, NewPayment, Written, claim_pg};
use crate::paid::idempotency::Scope;
use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        calls::status,
        entities::{call, idempotency, payment, receipt},
        payments::status as pay_status,
        write::{Done, Exec, Inserted},
    },
    receipt as receipts,
};
use sea_orm::{
    ActiveValue::Set,
    ColumnTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, ExprTrait, Insert,
    sea_query::{Expr, OnConflict, Query},
};
use uuid::Uuid;

/// The record holding `scope`, expired or not: a scope whose call has not finished is held past
/// its window (see `claim`).
async fn holder(db: &DatabaseConnection, scope: &str) -> Result<Option<idempotency::Model>, DbErr> {
    idempotency::Entity::find_by_id(scope.to_owned())
        .one(db)
        .await
}

fn existing(record: idempotency::Model) -> Claim {
    Claim::Existing {
        call_id: record.call_id,
        request_hash: record.request_hash,
    }
}

/// Claims `scope` for a new call paid by `pay`, or reports who already holds it, in one
/// transaction: the scope, the payment reservation, the call and its receipt. `window_start` is
/// the clock's service reading, which measures the idempotency windows (tests move it); the
/// records themselves carry `now`, its wall reading.
pub async fn claim(
    db: &DatabaseConnection,
    scope: &Scope,
    call: NewCall,
    pay: NewPayment,
    window_start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Claim, DbErr> {
    // No read first: the insert below finds a live holder itself (one statement fewer on every
    // new call, issue 12), and a repeat reads the holder after it.
    let call_id = Uuid::now_v7();
    let receipt_id = receipts::new_id();
    let window = chrono::Duration::from_std(scope.window).unwrap_or(chrono::Duration::hours(24));
    let model = call::Model {
        id: call_id,
        kind: call.kind.to_owned(),
        agent: call.agent,
        mode: call.mode,
        payer: call.payer,
        request_hash: call.request_hash,
        request: call.request,
        // Nothing may run until the settlement's outcome is known.
        status: status::SETTLING.into(),
        attempts: 0,
        runs: 0,
        error: None,
        receipt_id: receipt_id.clone(),
        request_id: call.request_id,
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    let written = if db.get_database_backend() == DbBackend::Postgres {
        let row = claim_pg::Row {
            scope: scope.key.clone(),
            call_id,
            request_hash: model.request_hash.clone(),
            window_start,
            window_end: window_start + window,
            payment_id: Uuid::now_v7(),
            payer: model.payer.clone(),
            nonce: pay.nonce,
            amount: pay.amount,
            network: pay.network,
            x402_version: pay.x402_version,
            settle_request: pay.settle_request,
            valid_before: pay.valid_before,
            now,
            kind: model.kind.clone(),
            agent: model.agent.clone(),
            mode: model.mode.clone(),
            request: model.request.clone(),
            receipt_id: receipt_id.clone(),
            request_id: model.request_id.clone(),
        };
        claim_pg::write(db, row).await?
    } else {
        let writes = writes(scope, &model, pay, window_start, window, now);
        grove_common::transaction!(db, async move |e| write(e, writes).await)?
    };
    match written {
        Written::Claimed => Ok(Claim::New(Box::new(model))),
        Written::NonceUsed => Ok(Claim::NonceUsed),
        // A live record, or one whose call has not finished, holds the scope: wait for, replay or
        // refuse against its call.
        Written::ScopeHeld => match holder(db, &scope.key).await? {
            Some(record) => Ok(existing(record)),
            None => Err(DbErr::Custom(
                "idempotency scope held by a record that is not live".into(),
            )),
        },
    }
}

/// The claim's four inserts for a transaction body (`write`).
fn writes(
    scope: &Scope,
    model: &call::Model,
    pay: NewPayment,
    window_start: DateTime<Utc>,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> Writes {
    let scope_row = idempotency::ActiveModel {
        scope: Set(scope.key.clone()),
        call_id: Set(model.id),
        request_hash: Set(model.request_hash.clone()),
        expires_at: Set(window_start + window),
        created_at: Set(window_start),
    };
    // An expired record of a finished call answers nothing any more,
    // so the insert takes its place in the same statement (no separate delete on the paid path);
    // the call's state is checked in that statement too, so a window cannot lapse under a call
    // whose settlement is still being reconciled.
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
    let take_scope = idempotency::Entity::insert(scope_row).on_conflict(replace_if_expired);
    let payment_row = payment::ActiveModel {
        id: Set(Uuid::now_v7()),
        call_id: Set(model.id),
        payer: Set(model.payer.clone()),
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
    let payment = payment::Entity::insert(payment_row).on_conflict(take_released);
    let receipt_row = receipt::ActiveModel {
        id: Set(model.receipt_id.clone()),
        call_id: Set(model.id),
        kind: Set(model.kind.clone()),
        created_at: Set(now),
        expires_at: Set(receipts::expires_at(now)),
    };
    Writes {
        scope: take_scope,
        payment,
        call: call::Entity::insert(call::ActiveModel::from(model.clone())),
        receipt: receipt::Entity::insert(receipt_row),
    }
}

/// A claim's four inserts, built before its transaction starts.
struct Writes {
    scope: Insert<idempotency::ActiveModel>,
    payment: Insert<payment::ActiveModel>,
    call: Insert<call::ActiveModel>,
    receipt: Insert<receipt::ActiveModel>,
}

/// The claim's transaction: the scope first, so that of two concurrent identical requests the
/// loser stops there rather than on the shared nonce; then the payment's reservation (a
/// reservation that was released, nothing processed and not the payer's fault, is taken over by
/// this call; any other holder of the authorization makes it used); then the call and its
/// receipt.
async fn write(e: &impl Exec, w: Writes) -> Result<Done<Written>, DbErr> {
    if e.exec(&w.scope).await? == 0 {
        return Ok(Done::Rollback(Written::ScopeHeld));
    }
    match e.insert(&w.payment).await? {
        Inserted::Rows(1) => {}
        Inserted::Rows(_) | Inserted::Duplicate => return Ok(Done::Rollback(Written::NonceUsed)),
    }
    e.exec(&w.call).await?;
    e.exec(&w.receipt).await?;
    Ok(Done::Commit(Written::Claimed))
}
