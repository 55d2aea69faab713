//! Waiting for a call's outcome: woken by the completion notifier, with a slow database re-check
//! as the backstop (pub/sub is at-most-once), bounded by the call deadline.

use crate::x402::challenge::codes;
use grove_common::{
    completion::Completions,
    db::{calls, calls::status},
};
use sea_orm::{DatabaseConnection, DbErr};
use std::time::Duration;
use tokio::{sync::broadcast::error::RecvError, time::Instant};
use uuid::Uuid;

pub enum Outcome {
    Completed,
    Failed(String),
    /// Nothing was bought; carries the call's code (`unpaid_code`).
    Unpaid(String),
    /// The deadline passed while the work was queued or running.
    TimedOut,
    /// The deadline passed while the settlement's outcome was still unknown.
    SettlementPending,
}

const RECHECK: Duration = Duration::from_secs(1);

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
async fn look(db: &DatabaseConnection, call_id: Uuid) -> Result<Result<Outcome, bool>, DbErr> {
    Ok(match calls::load(db, call_id).await? {
        Some(c) if c.status == status::COMPLETED => Ok(Outcome::Completed),
        Some(c) if c.status == status::FAILED => Ok(Outcome::Failed(c.error.unwrap_or_default())),
        Some(c) if c.status == status::UNPAID => Ok(Outcome::Unpaid(unpaid_code(c.error))),
        Some(c) => Err(c.status == status::SETTLING),
        None => Ok(Outcome::Failed("call record missing".into())),
    })
}

pub async fn until_final(
    db: &DatabaseConnection,
    completions: &Completions,
    call_id: Uuid,
    deadline: Instant,
) -> Result<Outcome, DbErr> {
    // Subscribe before the first look, so a completion between the look and the wait is not missed.
    let mut rx = completions.subscribe();
    if let Ok(done) = look(db, call_id).await? {
        return Ok(done);
    }
    let mut recheck = Instant::now() + RECHECK;
    loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                Ok(id) if id == call_id => {}
                Ok(_) => continue,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => tokio::time::sleep_until(recheck.min(deadline)).await,
            },
            _ = tokio::time::sleep_until(recheck) => recheck = Instant::now() + RECHECK,
            // The last look: a final state if there is one, else which kind of waiting ran out.
            _ = tokio::time::sleep_until(deadline) => {
                return Ok(match look(db, call_id).await? {
                    Ok(done) => done,
                    Err(true) => Outcome::SettlementPending,
                    Err(false) => Outcome::TimedOut,
                });
            }
        }
        if let Ok(done) = look(db, call_id).await? {
            return Ok(done);
        }
    }
}
