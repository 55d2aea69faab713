//! Writing a settlement's outcome back onto its payment and call, in one transaction.

use crate::x402::settle::SettleOutcome;
use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        calls::{self, Runner},
        entities::{call, idempotency, payment},
        write::{Done, Exec},
    },
    jobs::Started,
    ledger::{CallStatus, PaymentStatus},
};
use sea_orm::{ColumnTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, QueryFilter};
use std::sync::Arc;
use uuid::Uuid;

/// What writing an outcome did to its call.
pub struct Recorded {
    /// The outcome moved the call out of `settling` (false when reconciliation got there first).
    pub moved: bool,
    /// The run started in the same transaction (`record_outcome_starting`), when it did.
    pub started: Option<Started>,
}

/// Writes a settlement's outcome, with what it means for the call, in one transaction:
/// settled → the call may run (`settling → pending`); refused → nothing was bought (`unpaid`, the
/// scope released so a new payment can buy it); unknown → the payment is handed to
/// reconciliation, due at once (`now`), and the call keeps waiting in `settling`.
/// Returns whether this write moved the call (false when reconciliation got there first).
pub async fn record_outcome(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(record_outcome_starting(db, call_id, outcome, now, None)
        .await?
        .moved)
}

/// As `record_outcome`, but with a `runner` a settled call goes straight to `running`, the
/// runner holding its lease (`calls::start_settled`): the embedded api starts its in-process
/// worker's run in the transaction that records the settlement, one write transaction fewer
/// per paid call (issue 12). On PostgreSQL the outcome stays one statement and the worker
/// starts the run itself.
pub async fn record_outcome_starting(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Recorded, DbErr> {
    // The paid call's own outcome on PostgreSQL: one statement, not a four-round-trip
    // transaction (issue 12). The same writes as `write`'s settled branch.
    if let SettleOutcome::Settled { transaction, local } = outcome
        && db.get_database_backend() == DbBackend::Postgres
    {
        let tx = Some(transaction.clone()).filter(|t| !t.is_empty());
        let moved = calls::settled_in_one_statement(db, call_id, paid(*local), tx, now).await?;
        return Ok(Recorded {
            moved,
            started: None,
        });
    }
    grove_common::transaction!(db, async move |e| write(e, call_id, outcome, now, start)
        .await)
}

/// A settled payment's status: `unsettled` when it was only verified here (development).
fn paid(local: bool) -> PaymentStatus {
    if local {
        PaymentStatus::Unsettled
    } else {
        PaymentStatus::Settled
    }
}

async fn write(
    e: &impl Exec,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Done<Recorded>, DbErr> {
    let payment_update = payment::Entity::update_many()
        .col_expr(payment::Column::UpdatedAt, now.into())
        .filter(payment::Column::CallId.eq(call_id))
        .filter(payment::Column::Status.is_in([PaymentStatus::Reserved, PaymentStatus::Unknown]));
    let moved = match outcome {
        SettleOutcome::Settled { transaction, local } => {
            let tx = Some(transaction.clone()).filter(|t| !t.is_empty());
            let changed = payment_update
                .col_expr(payment::Column::Status, paid(*local).into())
                .col_expr(payment::Column::Transaction, tx.into())
                .col_expr(payment::Column::Error, Option::<String>::None.into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                );
            if e.exec(&changed).await? != 1 {
                return Ok(Done::Commit(Recorded {
                    moved: false,
                    started: None,
                }));
            }
            let Some(runner) = start else {
                let moved = move_call(e, call_id, CallStatus::Pending, None, now).await?;
                return Ok(Done::Commit(Recorded {
                    moved,
                    started: None,
                }));
            };
            let started = e
                .update_calls(calls::start_settled(call_id, runner))
                .await?;
            let started = started.into_iter().next().map(|call| Started {
                runner,
                call: Arc::new(call),
                at: tokio::time::Instant::now(),
            });
            return Ok(Done::Commit(Recorded {
                moved: started.is_some(),
                started,
            }));
        }
        SettleOutcome::Refused { reason } => {
            // Refused credentials processed nothing: the reservation is handed back so that the
            // same authorization pays once the operator fixes them, and the call's answer is not
            // a 402 (`codes::settlement_unavailable`).
            let (paid, code) = if outcome.is_operator_fault() {
                (PaymentStatus::Released, "settlement_unavailable")
            } else {
                (PaymentStatus::Refused, "settlement_failed")
            };
            let changed = payment_update
                .col_expr(payment::Column::Status, paid.into())
                .col_expr(payment::Column::Error, Some(reason.clone()).into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                );
            let moved = e.exec(&changed).await? == 1
                && move_call(
                    e,
                    call_id,
                    CallStatus::Unpaid,
                    Some(format!("{code}:{reason}")),
                    now,
                )
                .await?;
            if moved {
                let release = idempotency::Entity::delete_many()
                    .filter(idempotency::Column::CallId.eq(call_id));
                e.exec(&release).await?;
            }
            moved
        }
        SettleOutcome::Unknown { reason, sent } => {
            let mut update = payment_update
                .col_expr(payment::Column::Status, PaymentStatus::Unknown.into())
                .col_expr(payment::Column::Error, Some(reason.clone()).into())
                .col_expr(payment::Column::NextCheckAt, Some(now).into());
            if let Some(sent) = sent {
                update = update
                    .col_expr(payment::Column::SentTx, Some(sent.hash.clone()).into())
                    .col_expr(payment::Column::SentTxRaw, sent.raw.clone().into());
            }
            e.exec(&update).await?;
            false
        }
    };
    Ok(Done::Commit(Recorded {
        moved,
        started: None,
    }))
}

/// `settling → to`, only from `settling`: a settlement outcome decides a call once.
async fn move_call(
    e: &impl Exec,
    call_id: Uuid,
    to: CallStatus,
    error: Option<String>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let update = call::Entity::update_many()
        .col_expr(call::Column::Status, to.into())
        .col_expr(call::Column::Error, error.into())
        .col_expr(call::Column::UpdatedAt, now.into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.eq(CallStatus::Settling));
    Ok(e.exec(&update).await? == 1)
}
