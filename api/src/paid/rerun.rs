//! Paid work finished when the provider returns (issue 30): a paid coaching call that failed
//! because its model was down is run again by the service itself once the model's health gate
//! has closed, so its receipt shows the result and a repeat of the request returns it, with no
//! client needed and nothing charged again.
//!
//! Which calls: `failed` coaching calls whose stored reason says the model could not serve them
//! (`health::reasons::is_outage`: unreachable, 5xx or 429 past the retries, timed out, quota,
//! key, a missing model, or failed fast while the gate was open), that failed during the last
//! outage (from a window before the gate opened to a call deadline after it closed: a run
//! started during the outage ends within that), and whose receipt is still valid. A call that
//! failed for its own sake (answers that kept failing validation) is left to its client's free
//! retry.
//!
//! Never a second model call for work already done: only a `failed` call is reopened, through
//! the same compare-and-set as the client's identical retry (`ledger::reopen_failed`, which also
//! checks the payment settled), so of the two (and of several api processes) one re-runs it.
//! A re-run that fails again leaves the outage's interval, so it is re-run again only after a
//! later outage of its own.

use super::{fulfil, ledger};
use crate::state::AppState;
use chrono::{DateTime, Duration as Span, Utc};
use grove_common::{
    db::entities::call,
    health::{self, Outage, ProviderId, reasons},
    ledger::{CallKind, CallStatus},
    receipt,
};
use sea_orm::{ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use std::time::Duration;
use tokio::sync::watch;

/// How often a closed gate's last outage is looked at.
const TICK: Duration = Duration::from_secs(1);
/// Calls reopened per look, so a recovering provider gets the backlog in steps.
const BATCH: u64 = 32;

/// Runs until `stopped`: whenever the model's gate is closed after an outage, re-runs the paid
/// calls that outage failed, until none is left.
pub async fn run(state: AppState, mut stopped: watch::Receiver<bool>) {
    let Some(provider) = ProviderId::of_model(&state.config) else {
        return;
    };
    // The last outage whose calls are all re-run (as far as this process knows).
    let mut done: Option<Outage> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stopped.changed() => return,
        }
        if *stopped.borrow() {
            return;
        }
        let Some(outage) = state.gates.last_outage(&provider) else {
            continue;
        };
        if done == Some(outage) {
            continue;
        }
        match pass(&state, outage).await {
            // Nothing more to find, and no run from the outage can still fail.
            Ok(found) if found < BATCH as usize && state.clock.wall() > until(&state, outage) => {
                done = Some(outage);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "re-run of calls failed in an outage: could not read the calls")
            }
        }
    }
}

/// The end of an outage's interval: a run that started before the gate closed ends within a
/// call deadline, and a process reads the gate at most a refresh late.
fn until(state: &AppState, outage: Outage) -> DateTime<Utc> {
    let late = state.config.call_deadline + health::REFRESH * 2;
    outage.closed_at + Span::from_std(late).unwrap_or(Span::MAX)
}

/// One look: reopens and pushes up to a batch of the outage's failed calls. Returns how many it
/// found.
pub async fn pass(state: &AppState, outage: Outage) -> Result<usize, DbErr> {
    let now = state.clock.wall();
    let window = Span::from_std(state.config.health.window).unwrap_or(Span::zero());
    let valid_since = now - Span::days(receipt::LIFETIME_DAYS);
    let failed = call::Entity::find()
        .filter(call::Column::Status.eq(CallStatus::Failed))
        .filter(call::Column::Kind.eq(CallKind::Coaching))
        .filter(call::Column::UpdatedAt.gte(outage.opened_at - window))
        .filter(call::Column::UpdatedAt.lte(until(state, outage)))
        .filter(call::Column::CreatedAt.gt(valid_since))
        .filter(outage_reasons())
        .order_by_asc(call::Column::UpdatedAt)
        .limit(BATCH)
        .all(&state.db)
        .await?;
    let found = failed.len();
    for c in failed {
        if !c.error.as_deref().is_some_and(reasons::is_outage) {
            continue;
        }
        if ledger::reopen_failed(&state.db, c.id, now).await? {
            tracing::info!(call_id = %c.id, reason = c.error.as_deref().unwrap_or_default(),
                "re-running a paid call that failed while its model was down");
            fulfil::after_settled_stored(state, &c).await?;
        }
    }
    Ok(found)
}

/// `reasons::is_outage` as a filter (the rows it lets through are checked again in Rust).
fn outage_reasons() -> Condition {
    [
        reasons::UNAVAILABLE,
        reasons::DEADLINE,
        reasons::QUOTA,
        reasons::AUTH,
    ]
    .into_iter()
    .fold(
        Condition::any().add(call::Column::Error.eq(reasons::MODEL_MISSING)),
        |any, code| any.add(call::Column::Error.starts_with(code)),
    )
}
