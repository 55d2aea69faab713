//! Waiting for a call's outcome: woken by the completion notifier (whose backstop, one batched
//! database pass a second for the whole process, covers a lost pub/sub message), bounded by the
//! call deadline. A waiter reads its call only when woken: thousands of calls waiting on a slow
//! model cost no queries while they wait (issue 31).

use crate::x402::challenge::codes;
use grove_common::{
    completion::{Completions, Waiter},
    db::{calls, entities::result, outage},
    ledger::CallStatus,
};
use sea_orm::{DatabaseConnection, DbErr};
use tokio::time::Instant;
use uuid::Uuid;

pub enum Outcome {
    /// With its stored result when the look that found it read it (saves reading it again).
    Completed(Option<Box<result::Model>>),
    Failed(String),
    /// Nothing was bought; carries the call's code (`unpaid_code`).
    Unpaid(String),
    /// The deadline passed while the work was queued or running.
    TimedOut,
    /// The deadline passed while the settlement's outcome was still unknown.
    SettlementPending,
}

/// The code an unpaid call answers with: the one its settlement ended with
/// (`settlement_failed:<reason>`, a 402, or `settlement_unavailable:<reason>`, a 503).
pub fn unpaid_code(error: Option<String>) -> String {
    error
        .filter(|e| {
            e.starts_with("settlement_failed:") || e.starts_with(codes::SETTLEMENT_UNAVAILABLE)
        })
        .unwrap_or_else(|| codes::settlement_failed("settlement_refused"))
}

/// One look at the call: its final outcome, or `Err(settling)` while it is not final.
///
/// Its queries run from their own allocation, made for the look and freed after it: inline,
/// their futures (1.8 KiB) would be part of every waiting call's (issue 31).
async fn look(db: &DatabaseConnection, call_id: Uuid) -> Result<Result<Outcome, bool>, DbErr> {
    Box::pin(look_inline(db, call_id)).await
}

async fn look_inline(
    db: &DatabaseConnection,
    call_id: Uuid,
) -> Result<Result<Outcome, bool>, DbErr> {
    // A result exists only for a completed call (they are stored in one transaction), and a
    // woken waiter usually finds one: read it first, so the common case is one query.
    if let Some(result) = calls::load_result(db, call_id).await? {
        return Ok(Ok(Outcome::Completed(Some(Box::new(result)))));
    }
    Ok(match calls::load(db, call_id).await? {
        Some(c) if c.status == CallStatus::Completed => Ok(Outcome::Completed(None)),
        Some(c) if c.status == CallStatus::Failed => {
            Ok(Outcome::Failed(c.error.unwrap_or_default()))
        }
        Some(c) if c.status == CallStatus::Unpaid => Ok(Outcome::Unpaid(unpaid_code(c.error))),
        Some(c) => Err(c.status == CallStatus::Settling),
        None => Ok(Outcome::Failed("call record missing".into())),
    })
}

/// Waits for `call_id` to reach a final state, or for `deadline`.
pub async fn until_final(
    db: &DatabaseConnection,
    completions: &Completions,
    call_id: Uuid,
    deadline: Instant,
) -> Result<Outcome, DbErr> {
    until_final_with(db, completions.waiter(call_id), call_id, deadline, true).await
}

/// `until_final` with a waiter registered earlier. `look_first: false` when the waiter was
/// registered before the work was handed on to the queue: the call was not final then, and any
/// completion since has woken the waiter, so the first look waits for that (or the timer).
pub async fn until_final_with(
    db: &DatabaseConnection,
    waiter: Waiter,
    call_id: Uuid,
    deadline: Instant,
    look_first: bool,
) -> Result<Outcome, DbErr> {
    if look_first && let Ok(done) = look(db, call_id).await? {
        return Ok(done);
    }
    loop {
        tokio::select! {
            () = waiter.notified() => {}
            () = tokio::time::sleep_until(deadline) => {
                if let Some(result) = waiter.result() {
                    return Ok(Outcome::Completed(Some(Box::new(result))));
                }
                return Ok(match look(db, call_id).await {
                    Ok(Ok(done)) => done,
                    Ok(Err(true)) => Outcome::SettlementPending,
                    // A database out at the deadline: the work goes on, the receipt tells.
                    Ok(Err(false)) => Outcome::TimedOut,
                    Err(e) if outage::is_unreachable(&e) => Outcome::TimedOut,
                    Err(e) => return Err(e),
                });
            }
        }
        // An in-process worker hands over the result it committed: no read needed.
        if let Some(result) = waiter.result() {
            return Ok(Outcome::Completed(Some(Box::new(result))));
        }
        match look(db, call_id).await {
            Ok(Ok(done)) => return Ok(done),
            Ok(Err(_)) => {}
            // The database went away while the work runs (a restart, a failover): keep
            // waiting for it, the completion or the deadline, whichever comes first.
            Err(e) if outage::is_unreachable(&e) => {
                tracing::debug!(error = %e, %call_id, "database unreachable while waiting; waiting on");
            }
            Err(e) => return Err(e),
        }
    }
}
