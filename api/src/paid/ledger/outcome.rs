//! A settlement's outcome, as the settler reported it, handed to the ledger
//! (`grove_common::ledger::record`), which writes it onto the payment and its call.

use crate::x402::settle::SettleOutcome;
use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        calls::{self, Runner},
        entities::admin_audit,
        outage,
    },
    jobs::Started,
    ledger::{self, CallStatus, Left, Outcomes, Recorded, Settlement},
};
use sea_orm::{DatabaseConnection, DbErr};
use std::sync::Arc;
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
    let recorded = ledger::record(db, call_id, &settlement(outcome), now, None).await?;
    Ok(recorded.moved)
}

/// An operator's audit row, built from what the outcome's write left (`ledger::Left`).
pub type AuditRow<'a> = Box<dyn FnOnce(&Left) -> admin_audit::ActiveModel + Send + 'a>;

/// `record_outcome` with an operator's audit row, built by `audit` from what the write left
/// and written in the same transaction when the outcome moves the call
/// (`ledger::record_audited`).
pub async fn record_outcome_audited(
    db: &DatabaseConnection,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    audit: impl FnOnce(&Left) -> admin_audit::ActiveModel + Send,
) -> Result<bool, DbErr> {
    Ok(
        ledger::record_audited(db, call_id, &settlement(outcome), now, audit)
            .await?
            .moved,
    )
}

/// As `record_outcome`, but with a `runner` a settled call goes straight to `running`, the
/// runner holding its lease: the embedded api starts its in-process worker's run in the
/// transaction that records the settlement, one write transaction fewer per paid call (issue
/// 12). On PostgreSQL the outcome stays one statement, shared with the outcomes that queue
/// beside it (`ledger::Outcomes`), and the worker starts the run itself.
async fn record_outcome_starting(
    outcomes: &Outcomes,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<Recorded, DbErr> {
    outcomes
        .record(call_id, &settlement(outcome), now, start)
        .await
}

/// What a paid request does with its own settlement's outcome once it is recorded.
#[derive(Debug)]
pub enum PaidRecord {
    /// This request's write moved the call: it acts on the outcome (pushes the job, or answers
    /// the refusal). `started`: the run begun in the same transaction (also when the attempt
    /// that began it lost its answer: the run is found under this request's own run id).
    Moved { started: Option<Started> },
    /// We do not know whether this request's write moved the call: an attempt before the last
    /// failed after it may have committed, and the last found the call already decided. The
    /// call stands where this outcome leaves it (settled: `pending`; refused: `unpaid`), so the
    /// request acts as if it had moved it: a second push of a live job does no extra work, a
    /// refusal's answer is the one its waiters get anyway, and what a refusal gives back went
    /// back in the write's own transaction.
    MaybeMoved,
    /// Another writer decided the call first (reconciliation took a stale reservation, or the
    /// outcome was unknown): the request awaits the call's own outcome.
    Elsewhere,
}

impl PaidRecord {
    /// The request acts on its outcome (`Moved` or `MaybeMoved`).
    pub fn acts(&self) -> bool {
        !matches!(self, PaidRecord::Elsewhere)
    }
}

/// A paid request's own outcome (or one reconciliation proved), written through a database
/// blip: the money has moved (or may have), so a pool timeout or a dropped connection here is
/// waited out (`outage::retrying`) rather than answered 503, which would send the caller back
/// for what it already paid for (or, for reconciliation, leave a settled call without its job
/// until the recovery sweep's deadline of quiet).
pub async fn record_paid_outcome(
    outcomes: &Outcomes,
    call_id: Uuid,
    outcome: &SettleOutcome,
    now: DateTime<Utc>,
    start: Option<Runner>,
) -> Result<PaidRecord, DbErr> {
    let db = outcomes.db();
    let mut attempts = 0u32;
    let recorded = outage::retrying("a settlement's outcome", || {
        attempts += 1;
        record_outcome_starting(outcomes, call_id, outcome, now, start)
    })
    .await?;
    if recorded.moved {
        return Ok(PaidRecord::Moved {
            started: recorded.started,
        });
    }
    // Only an attempt whose answer was lost can have been the write that moved the call.
    let Some(left_at) = leaves_at(outcome).filter(|_| attempts > 1) else {
        return Ok(PaidRecord::Elsewhere);
    };
    let stored = outage::retrying("a call after its outcome", || calls::load(db, call_id)).await?;
    let Some(call) = stored else {
        return Ok(PaidRecord::Elsewhere);
    };
    if call.status == left_at {
        return Ok(PaidRecord::MaybeMoved);
    }
    // Running under this request's own run: a lost attempt did move it and start the run (the
    // run's id is ours alone), so the run goes ahead here as if that answer had come.
    if let Some(runner) = start
        && call.status == CallStatus::Running
    {
        let holder = outage::retrying("a call's lease", || calls::holder(db, call_id)).await?;
        if holder.and_then(|h| h.lease_owner) == Some(runner.run.to_string()) {
            return Ok(PaidRecord::Moved {
                started: Some(Started {
                    runner,
                    call: Arc::new(call),
                    at: tokio::time::Instant::now(),
                }),
            });
        }
    }
    Ok(PaidRecord::Elsewhere)
}

/// Where the write of `outcome` leaves a call it moves (`ledger::Left`, without a run started
/// in it: a retried write's run is not known to have started). None: it moves no call.
fn leaves_at(outcome: &SettleOutcome) -> Option<CallStatus> {
    Left::of(&settlement(outcome)).map(|left| left.call)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The states `MaybeMoved` trusts are the ones the ledger's writes leave (checked on both
    /// databases by `tests/ledger_transitions.rs`): a settled call found `running` or
    /// `completed` was moved on by a worker, and an unknown outcome never moves a call.
    #[test]
    fn a_lost_answer_is_trusted_only_where_the_write_would_have_left_the_call() {
        let settled = SettleOutcome::Settled {
            transaction: "0xab".into(),
            local: false,
        };
        let refused = SettleOutcome::Refused {
            reason: "insufficient_funds".into(),
        };
        let unknown = SettleOutcome::Unknown {
            reason: "timeout".into(),
            sent: None,
        };
        assert_eq!(leaves_at(&settled), Some(CallStatus::Pending));
        assert_eq!(leaves_at(&refused), Some(CallStatus::Unpaid));
        assert_eq!(leaves_at(&unknown), None);
    }
}
