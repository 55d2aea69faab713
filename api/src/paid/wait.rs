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

async fn final_state(db: &DatabaseConnection, call_id: Uuid) -> Result<Option<Outcome>, DbErr> {
    Ok(match calls::load(db, call_id).await? {
        Some(c) if c.status == status::COMPLETED => Some(Outcome::Completed),
        Some(c) if c.status == status::FAILED => Some(Outcome::Failed(c.error.unwrap_or_default())),
        Some(c) if c.status == status::UNPAID => Some(Outcome::Unpaid(unpaid_code(c.error))),
        Some(_) => None,
        None => Some(Outcome::Failed("call record missing".into())),
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
    if let Some(done) = final_state(db, call_id).await? {
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
            _ = tokio::time::sleep_until(deadline) => return at_deadline(db, call_id).await,
        }
        if let Some(done) = final_state(db, call_id).await? {
            return Ok(done);
        }
    }
}

/// The last look: a final state if there is one, else which kind of waiting ran out.
async fn at_deadline(db: &DatabaseConnection, call_id: Uuid) -> Result<Outcome, DbErr> {
    if let Some(done) = final_state(db, call_id).await? {
        return Ok(done);
    }
    let settling = calls::load(db, call_id)
        .await?
        .is_some_and(|c| c.status == status::SETTLING);
    Ok(if settling {
        Outcome::SettlementPending
    } else {
        Outcome::TimedOut
    })
}
