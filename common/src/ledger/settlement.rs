//! A settlement's outcome written onto its payment and call, in one transaction, wherever it
//! was learned (the paid request, reconciliation); and reservations whose outcome was never
//! written, handed to reconciliation.

use super::{
    call as moves,
    status::{CallStatus, PaymentStatus},
};
use crate::db::{
    calls::Runner,
    entities::{admin_audit, idempotency, payment},
    outage, phone_marks,
    write::{Done, Exec},
};
use crate::jobs::Started;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue, ColumnTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, QueryFilter,
    sea_query::Expr,
};
use std::sync::Arc;
use uuid::Uuid;

/// What a settlement came to, as the ledger records it.
#[derive(Clone, Debug)]
pub enum Settlement {
    /// The money moved (`local`: verified here only, in development). `transaction` when a
    /// chain named it.
    Settled {
        transaction: Option<String>,
        local: bool,
    },
    /// Nothing was bought. `operator_fault`: nothing was processed, through no fault of the
    /// payer's (our credentials were refused), so the authorization is handed back to pay again.
    Refused {
        reason: String,
        operator_fault: bool,
    },
    /// The money may or may not have moved; `sent`: a transaction that may carry it (its hash,
    /// and its signed bytes when we sent it).
    Unknown {
        reason: String,
        sent: Option<(String, Option<String>)>,
    },
}

/// The error an unpaid call records: `<code>:<reason>`, the code its answer carries.
pub const SETTLEMENT_FAILED: &str = "settlement_failed";
pub const SETTLEMENT_UNAVAILABLE: &str = "settlement_unavailable";

/// What writing an outcome did to its call.
pub struct Recorded {
    /// The outcome moved the call out of `settling` (false when reconciliation got there first).
    pub moved: bool,
    /// The run started in the same transaction (`start` given), when it did.
    pub started: Option<Started>,
}

/// What an outcome leaves on the payment and the call it moves: the values `write` sets, and
/// nothing else knows (an operator's audit row records them, `record_audited`; a paid request
/// whose write lost its answer compares them with the call it finds). The call's state is the
/// one left without a run started in the same transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Left {
    pub payment: PaymentStatus,
    pub transaction: Option<String>,
    pub error: Option<String>,
    pub call: CallStatus,
}

impl Left {
    /// What `outcome` leaves, when it moves a call (an unknown outcome moves none).
    pub fn of(outcome: &Settlement) -> Option<Left> {
        match outcome {
            Settlement::Settled { transaction, local } => {
                Some(Left::settled(transaction.as_deref(), *local))
            }
            Settlement::Refused {
                reason,
                operator_fault,
            } => Some(Left::refused(reason, *operator_fault)),
            Settlement::Unknown { .. } => None,
        }
    }

    fn settled(transaction: Option<&str>, local: bool) -> Left {
        Left {
            payment: paid(local),
            transaction: transaction.filter(|t| !t.is_empty()).map(str::to_owned),
            error: None,
            call: CallStatus::Pending,
        }
    }

    /// Refused credentials processed nothing: the reservation is handed back (`released`) so
    /// that the same authorization pays once the operator fixes them.
    fn refused(reason: &str, operator_fault: bool) -> Left {
        Left {
            payment: if operator_fault {
                PaymentStatus::Released
            } else {
                PaymentStatus::Refused
            },
            transaction: None,
            error: Some(reason.to_owned()),
            call: CallStatus::Unpaid,
        }
    }
}

/// Where a payment may be when its settlement's outcome is written.
pub const OUTCOME_FROM: [PaymentStatus; 2] = PaymentStatus::OPEN;

/// Writes a settlement's outcome, with what it means for the call, in one transaction:
/// settled → the call may run (`settling → pending`, or `→ running` for `start`, the embedded
/// worker's run, in the same transaction: one write transaction fewer per paid call, issue 12);
/// refused → nothing was bought (`unpaid`, the scope released so a new payment can buy it, and
/// a review's phone mark given back);
/// unknown → the payment is handed to reconciliation, due at once (`now`), and the call keeps
/// waiting in `settling`. Only a payment still `reserved` or `unknown` takes an outcome.
pub async fn record(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &Settlement,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Recorded, DbErr> {
    // The paid call's own outcome on PostgreSQL: one statement, not a four-round-trip
    // transaction (issue 12). The same writes as `write`'s settled branch.
    if let Settlement::Settled { transaction, local } = outcome
        && db.get_database_backend() == DbBackend::Postgres
    {
        let left = Left::settled(transaction.as_deref(), *local);
        let moved = super::pg::settled(db, call_id, left.payment, left.transaction, now).await?;
        return Ok(Recorded {
            moved,
            started: None,
        });
    }
    crate::transaction!(db, async move |e| write(e, call_id, outcome, now, start)
        .await)
}

/// `record` (no run started), with an operator's record of this decision, built by `audit`
/// from what the write left and written in the same transaction when the outcome moves the
/// call: the decision and its record stand or fall together. Always a transaction, also for a
/// settled outcome on PostgreSQL (operators' decisions are rare).
pub async fn record_audited(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &Settlement,
    now: DateTime<Utc>,
    audit: impl FnOnce(&Left) -> admin_audit::ActiveModel + Send,
) -> Result<Recorded, DbErr> {
    // Built once: its id is how a decision whose commit lost its answer is found to have landed.
    let row = Left::of(outcome).map(|left| audit(&left));
    let audit_id = row.as_ref().and_then(|r| match &r.id {
        ActiveValue::Set(id) | ActiveValue::Unchanged(id) => Some(*id),
        ActiveValue::NotSet => None,
    });
    let decide = || {
        let row = row.clone();
        async move {
            crate::transaction!(db, async move |e| {
                let done = write(e, call_id, outcome, now, None).await?;
                if let (Done::Commit(Recorded { moved: true, .. }), Some(row)) = (&done, row) {
                    e.exec(&admin_audit::Entity::insert(row)).await?;
                }
                Ok(done)
            })
        }
    };
    let what = "an operator's decision";
    let (recorded, maybe_written) = outage::knowing(what, OPERATOR_RIDE_OUT, decide).await?;
    // Written again, it found the payment decided: by the attempt whose answer was lost when
    // that attempt's audit row is there (the same decision, this operator's), else by another.
    if maybe_written
        && !recorded.moved
        && let Some(id) = audit_id
    {
        let ours = outage::read_knowing(true, what, OPERATOR_RIDE_OUT, || {
            admin_audit::Entity::find_by_id(id).one(db)
        })
        .await?;
        if ours.is_some() {
            tracing::warn!(%call_id, "an operator's decision lost its answer; it was written");
            return Ok(Recorded {
                moved: true,
                started: None,
            });
        }
    }
    Ok(recorded)
}

/// How long an operator's decision whose commit lost its answer is written again through a
/// blip before the operator is told the database is unavailable.
const OPERATOR_RIDE_OUT: std::time::Duration = std::time::Duration::from_secs(10);

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
    outcome: &Settlement,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Done<Recorded>, DbErr> {
    let payment_update = payment::Entity::update_many()
        .col_expr(payment::Column::UpdatedAt, now.into())
        .filter(payment::Column::CallId.eq(call_id))
        .filter(payment::Column::Status.is_in(OUTCOME_FROM));
    let unmoved = Recorded {
        moved: false,
        started: None,
    };
    let moved = match outcome {
        Settlement::Settled { transaction, local } => {
            let left = Left::settled(transaction.as_deref(), *local);
            let changed = payment_update
                .col_expr(payment::Column::Status, left.payment.into())
                .col_expr(payment::Column::Transaction, left.transaction.into())
                .col_expr(payment::Column::Error, left.error.into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                );
            if e.exec(&changed).await? != 1 {
                return Ok(Done::Commit(unmoved));
            }
            let Some(runner) = start else {
                let moved = moves::settle(e, call_id, left.call, None, now).await?;
                return Ok(Done::Commit(Recorded {
                    moved,
                    started: None,
                }));
            };
            let started = e
                .update_calls(moves::start_settled(call_id, runner))
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
        Settlement::Refused {
            reason,
            operator_fault,
        } => {
            let left = Left::refused(reason, *operator_fault);
            // Refused credentials processed nothing: the call's answer is not a 402
            // (`settlement_unavailable`).
            let code = if *operator_fault {
                SETTLEMENT_UNAVAILABLE
            } else {
                SETTLEMENT_FAILED
            };
            let changed = payment_update
                .col_expr(payment::Column::Status, left.payment.into())
                .col_expr(payment::Column::Transaction, left.transaction.into())
                .col_expr(payment::Column::Error, left.error.into())
                .col_expr(
                    payment::Column::NextCheckAt,
                    Option::<DateTime<Utc>>::None.into(),
                );
            let error = Some(format!("{code}:{reason}"));
            let moved = e.exec(&changed).await? == 1
                && moves::settle(e, call_id, left.call, error, now).await?;
            if moved {
                let release = idempotency::Entity::delete_many()
                    .filter(idempotency::Column::CallId.eq(call_id));
                e.exec(&release).await?;
                // What the sale took before settlement (a review's phone mark) goes back with
                // the refusal that moved the call, in its transaction: exactly once.
                let (drop_new, restore) = phone_marks::give_back_statements(call_id);
                e.exec(&drop_new).await?;
                e.exec(&restore).await?;
            }
            moved
        }
        Settlement::Unknown { reason, sent } => {
            let mut update = payment_update
                .col_expr(payment::Column::Status, PaymentStatus::Unknown.into())
                .col_expr(payment::Column::Error, Some(reason.clone()).into())
                .col_expr(payment::Column::NextCheckAt, Some(now).into());
            if let Some((hash, raw)) = sent {
                update = update
                    .col_expr(payment::Column::SentTx, Some(hash.clone()).into())
                    .col_expr(payment::Column::SentTxRaw, raw.clone().into());
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

/// Reservations whose outcome was never written, last touched before `cutoff` (their process
/// died mid-settlement, or before writing the outcome): `reserved → unknown`, due now, for
/// reconciliation. Returns how many moved.
pub async fn reservations_unknown(
    db: &DatabaseConnection,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let res = payment::Entity::update_many()
        .col_expr(payment::Column::Status, Expr::value(PaymentStatus::Unknown))
        .col_expr(payment::Column::NextCheckAt, Expr::value(now))
        .col_expr(payment::Column::UpdatedAt, Expr::value(now))
        .filter(crate::db::payments::status_is(PaymentStatus::Reserved))
        .filter(payment::Column::UpdatedAt.lt(cutoff))
        .exec(db)
        .await?;
    Ok(res.rows_affected)
}
