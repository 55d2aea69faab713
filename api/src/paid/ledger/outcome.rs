//! A settlement's outcome, as the settler reported it, handed to the ledger
//! (`grove_common::ledger::record`), which writes it onto the payment and its call.

use crate::x402::settle::SettleOutcome;
use chrono::{DateTime, Utc};
use grove_common::{
    db::{calls::Runner, outage},
    ledger::{self, Recorded, Settlement},
};
use sea_orm::{DatabaseConnection, DbErr};
use uuid::Uuid;

/// The outcome as the ledger records it.
fn settlement(outcome: &SettleOutcome) -> Settlement {
    match outcome {
        SettleOutcome::Settled { transaction, local } => Settlement::Settled {
            transaction: Some(transaction.clone()),
            local: *local,
        },
        SettleOutcome::Refused { reason } => Settlement::Refused {
            reason: reason.clone(),
            operator_fault: outcome.is_operator_fault(),
        },
        SettleOutcome::Unknown { reason, sent } => Settlement::Unknown {
            reason: reason.clone(),
            sent: sent.as_ref().map(|s| (s.hash.clone(), s.raw.clone())),
        },
    }
}

/// Records a settlement's outcome (`ledger::record`). Returns whether this write moved the call
/// (false when reconciliation got there first).
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
/// runner holding its lease: the embedded api starts its in-process worker's run in the
/// transaction that records the settlement, one write transaction fewer per paid call (issue
/// 12). On PostgreSQL the outcome stays one statement and the worker starts the run itself.
async fn record_outcome_starting(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Recorded, DbErr> {
    ledger::record(db, call_id, &settlement(outcome), now, start).await
}

/// A paid request's own outcome, written through a database blip: the money has moved (or may
/// have), so a pool timeout or a dropped connection here is waited out (`outage::retrying`)
/// rather than answered 503, which would send the caller back for what it already paid for.
/// The second value: an attempt before the last failed. Such an attempt may have committed
/// before its answer was lost, so `moved: false` after it may be this request's own write.
pub async fn record_paid_outcome(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<(Recorded, bool), DbErr> {
    let mut attempts = 0u32;
    let recorded = outage::retrying("a settlement's outcome", || {
        attempts += 1;
        record_outcome_starting(db, call_id, outcome, now, start)
    })
    .await?;
    Ok((recorded, attempts > 1))
}
