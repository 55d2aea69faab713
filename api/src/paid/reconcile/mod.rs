//! The server's own follow-through on money already taken (issues 7 and 8), run by every api
//! process whether or not a client comes back:
//!
//! - **Reconciliation.** A payment whose settlement outcome is unknown is checked again with
//!   backoff: on chain when an RPC is configured (its `AuthorizationUsed` log and the `Transfer`
//!   after it prove our transfer and name its transaction; an `AuthorizationCanceled` log, or the
//!   authorization expired unused, proves it never will happen), then by settling again: the
//!   facilitator gets the identical `/settle` body (safe: a used nonce cannot move money twice),
//!   our own settlement follows the transaction it sent and sends another only once that one
//!   provably never will be mined. Settled → the work runs. Proven unsettled → the call is
//!   `unpaid` and its scope released, so a new payment can buy it. Anything else stays unknown:
//!   never refunded by guessing, never charged again.
//! - **Recovery.** A settled call still `pending` long after its job should have started (a job
//!   lost with Redis, a process that died with a push retry in hand) is pushed again. With the
//!   embedded worker, a call left `pending` by an earlier run of this process is pushed at the
//!   first pass (its job was in that process's memory). Starting a job is atomic in the worker,
//!   so an extra push of a live job does no extra work. Runs that died mid-call are not the
//!   sweep's: the workers take them over as soon as their process is gone (`runtime::takeover`);
//!   the sweep only pushes those whose time lease lapsed long ago.
//!
//! Several api processes may sweep at once: every check takes its row with a compare-and-set on
//! `next_check_at` (or `updated_at`), so one process handles each due row per period.

mod decide;
mod recover;
mod reorgs;

use super::{fulfil, ledger};
use crate::{
    state::AppState,
    x402::settle::{SentTransaction, SettleOutcome},
};
use chrono::{DateTime, Duration, Utc};
use decide::decide;
pub(crate) use decide::query_of;
use futures::future::join_all;
use grove_common::config::SettlementMode;
use grove_common::{
    db::{calls, entities::payment, payments},
    ledger::PaymentStatus,
};
use sea_orm::{
    ColumnTrait, DbErr, EntityTrait, ExprTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::Expr,
};
use tokio::sync::watch;

/// Rows handled per pass, concurrently (each check may wait for the facilitator's timeout).
const BATCH: u64 = 16;
/// Beyond the longest settle, what one check may spend reading the chain before and after it
/// (a handful of JSON-RPC requests, each bounded at 10 s), and a margin.
const CHECK_MARGIN: Duration = Duration::seconds(90);
/// The longest pause between two checks of one unknown payment.
const MAX_BACKOFF_S: i64 = 60;
/// Without a chain to ask, how long after `validBefore` re-posting goes on before the payment is
/// set aside for an operator (a re-post of an expired authorization proves nothing either way).
const UNRESOLVED_AFTER: Duration = Duration::hours(1);

/// How far before a payment was recorded its authorization's use is looked for on chain: a use
/// older than the request would have been refused at once, never left unknown.
const LOG_LOOKBACK: Duration = Duration::minutes(10);

/// What one pass did, for logs, metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    pub settled: usize,
    pub unsettled: usize,
    pub still_unknown: usize,
    pub repushed: usize,
    /// Settled payments whose transfer left the chain (the reorg watch).
    pub reorged: usize,
}

/// Runs a pass at start-up, then every `interval` and at once when woken (`state.reconcile`),
/// until `stopped`.
pub async fn run(
    state: AppState,
    interval: std::time::Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let started_at = state.clock.wall();
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                _ = state.reconcile.notified() => {}
                _ = tokio::time::sleep(interval) => {}
                _ = stopped.changed() => return,
            }
        }
        if *stopped.borrow() {
            return;
        }
        match pass(&state, started_at).await {
            Ok(stats) if stats != PassStats::default() => {
                tracing::info!(?stats, "reconciliation pass");
            }
            Ok(_) => {}
            // The database is unreachable: the next pass tries again.
            Err(e) => tracing::warn!(error = %e, "reconciliation pass failed"),
        }
    }
}

/// How long a reservation may wait for its settlement's outcome before it counts as unknown:
/// twice the longest settle timeout, and a margin. A gate that is alive records an outcome
/// (unknown, at worst) within one timeout, so a reservation older than this lost its process
/// mid-settlement (or the write of its outcome), and the money may have moved. Marking it
/// unknown early is harmless: the re-posted identical `/settle` cannot move money twice.
fn stale_reservation_after(state: &AppState) -> Duration {
    longest_settle(state) * 2 + Duration::seconds(5)
}

/// The longest one settlement may take, by configuration (`X402_FACILITATOR_TIMEOUT_S` or
/// `X402_SETTLE_TIMEOUT_S`).
fn longest_settle(state: &AppState) -> Duration {
    let settlement = &state.config.settlement;
    let longest = match settlement.mode {
        SettlementMode::Facilitator => state.config.facilitator_timeout,
        SettlementMode::SelfHosted => settlement.timeout,
    };
    Duration::from_std(longest).unwrap_or(Duration::minutes(5))
}

/// How long a check holds its row before another process may take it: longer than the longest
/// settle it may make, and the chain reads around it, so that a second process never re-posts
/// (or, settling ourselves, sends) while the first is still waiting for its answer.
fn lease(state: &AppState) -> Duration {
    longest_settle(state) + CHECK_MARGIN
}

/// Reservations whose outcome was never recorded, past `stale_reservation_after`: unknown, due now.
async fn reservations_left_unknown(state: &AppState, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let cutoff = now - stale_reservation_after(state);
    let moved = grove_common::ledger::reservations_unknown(&state.db, cutoff, now).await?;
    if moved > 0 {
        tracing::warn!(
            payments = moved,
            "settlements whose process ended before their outcome was recorded; reconciling them as unknown"
        );
    }
    Ok(moved)
}

/// One pass: reservations left without an outcome, every due unknown payment, then every
/// stranded settled call. `started_at`: when this process started.
pub async fn pass(state: &AppState, started_at: DateTime<Utc>) -> Result<PassStats, DbErr> {
    let mut stats = PassStats::default();
    let now = state.clock.wall();
    reservations_left_unknown(state, now).await?;
    let due = payment::Entity::find()
        .filter(payments::status_is(PaymentStatus::Unknown))
        .filter(payment::Column::NextCheckAt.lte(now))
        .order_by_asc(payment::Column::NextCheckAt)
        .limit(BATCH)
        .all(&state.db)
        .await?;
    let checks = due.into_iter().map(|p| check(state, p, now));
    for decided in join_all(checks).await {
        match decided? {
            Some(Decision::Settled(_)) => stats.settled += 1,
            Some(Decision::Unsettled(_)) => stats.unsettled += 1,
            Some(Decision::Unknown { .. }) => stats.still_unknown += 1,
            None => {}
        }
    }
    stats.repushed = recover::stranded(state, now, started_at).await?;
    stats.reorged = reorgs::watch(state, now).await?;
    Ok(stats)
}

#[derive(Debug)]
pub(crate) enum Decision {
    /// The transfer happened (its transaction hash; empty only when no chain could name it).
    Settled(String),
    /// Proven never to happen (the reason): canceled, its nonce used by another authorization, or
    /// expired unused.
    Unsettled(String),
    /// Still unknown; `sent` is a newer transaction that may carry it.
    Unknown {
        reason: String,
        sent: Option<SentTransaction>,
    },
}

/// Writes a proven outcome of an unknown payment through the ledger, and acts on it: settled →
/// the call's work starts; unsettled → the call is unpaid, what its product took before
/// settlement (a review's phone mark) is given back, and a request waiting for it hears. `by`
/// labels the settlement metric (`reconciled`, or `operator` for an operator's resolution, which
/// moves the call and its scope exactly as reconciliation would). An `Unknown` decision writes
/// nothing. Returns whether the outcome moved the call (false: it was decided first).
pub(crate) async fn conclude(
    state: &AppState,
    call_id: uuid::Uuid,
    decision: &Decision,
    by: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    conclude_audited(state, call_id, decision, by, now, None).await
}

/// `conclude`, with an operator's audit row written in the transaction that records the
/// outcome when it moves the call (the admin's resolve): a decision is never without its record.
pub(crate) async fn conclude_audited(
    state: &AppState,
    call_id: uuid::Uuid,
    decision: &Decision,
    by: &str,
    now: DateTime<Utc>,
    audit: Option<ledger::AuditRow<'_>>,
) -> Result<bool, DbErr> {
    // Proven money is written through a blip as a paid request's own outcome is: a write whose
    // answer was lost and that finds the call where it would have left it acts on it, so the
    // job is pushed now rather than by the recovery sweep a whole call deadline later.
    let record = async |outcome: &SettleOutcome| match audit {
        Some(audit) => {
            ledger::record_outcome_audited(&state.db, call_id, outcome, now, audit).await
        }
        None => Ok(
            ledger::record_paid_outcome(&state.outcomes, call_id, outcome, now, None)
                .await?
                .acts(),
        ),
    };
    match decision {
        Decision::Settled(transaction) => {
            let outcome = SettleOutcome::Settled {
                transaction: transaction.clone(),
                local: false,
            };
            state.metrics.settlement(&format!("{by}_settled"));
            let moved = record(&outcome).await?;
            if moved && let Some(call) = calls::load(&state.db, call_id).await? {
                fulfil::after_settled_stored(state, &call).await?;
            }
            Ok(moved)
        }
        Decision::Unsettled(reason) => {
            state.metrics.settlement(&format!("{by}_unsettled"));
            let outcome = SettleOutcome::Refused {
                reason: reason.clone(),
            };
            // What the product took before settlement (a review's phone mark) goes back in the
            // refusal's own write; waiters are woken by the process whose write moved the call.
            let moved = record(&outcome).await?;
            if moved {
                state.completions.notify(call_id).await;
            }
            Ok(moved)
        }
        Decision::Unknown { .. } => Ok(false),
    }
}

/// Checks one unknown payment, if this process wins its lease. `None`: another process has it.
async fn check(
    state: &AppState,
    p: payment::Model,
    now: DateTime<Utc>,
) -> Result<Option<Decision>, DbErr> {
    let leased = payment::Entity::update_many()
        .col_expr(
            payment::Column::NextCheckAt,
            Expr::value(Some(now + lease(state))),
        )
        .col_expr(
            payment::Column::Checks,
            Expr::col(payment::Column::Checks).add(1),
        )
        .filter(payment::Column::Id.eq(p.id))
        .filter(payment::Column::Status.eq(PaymentStatus::Unknown))
        .filter(payment::Column::NextCheckAt.eq(p.next_check_at))
        .exec(&state.db)
        .await?;
    if leased.rows_affected != 1 {
        return Ok(None);
    }
    let decision = decide(state, &p).await;
    let call_id = p.call_id;
    match &decision {
        Decision::Settled(_) => {
            tracing::info!(%call_id, checks = p.checks + 1, "unknown settlement reconciled: settled");
            conclude(state, call_id, &decision, "reconciled", now).await?;
        }
        Decision::Unsettled(reason) => {
            tracing::info!(%call_id, %reason, "unknown settlement reconciled: never paid");
            conclude(state, call_id, &decision, "reconciled", now).await?;
        }
        Decision::Unknown { reason, sent } => {
            let expired_at = p
                .valid_before
                .and_then(|s| DateTime::<Utc>::from_timestamp(s, 0));
            let give_up =
                state.chain.is_none() && expired_at.is_some_and(|at| now > at + UNRESOLVED_AFTER);
            let next = if give_up {
                tracing::error!(%call_id, %reason, "settlement outcome cannot be known without a chain: set BASE_RPC_URL; set aside for an operator");
                None
            } else {
                let backoff = 1_i64 << (p.checks.clamp(0, 6));
                Some(now + Duration::seconds(Ord::min(backoff, MAX_BACKOFF_S)))
            };
            let mut update = payment::Entity::update_many()
                .col_expr(payment::Column::NextCheckAt, Expr::value(next))
                .col_expr(payment::Column::Error, Expr::value(Some(reason.clone())))
                .col_expr(payment::Column::UpdatedAt, Expr::value(now));
            if let Some(sent) = sent {
                update = update
                    .col_expr(
                        payment::Column::SentTx,
                        Expr::value(Some(sent.hash.clone())),
                    )
                    .col_expr(payment::Column::SentTxRaw, Expr::value(sent.raw.clone()));
            }
            update
                .filter(payment::Column::Id.eq(p.id))
                .filter(payment::Column::Status.eq(PaymentStatus::Unknown))
                .exec(&state.db)
                .await?;
        }
    }
    Ok(Some(decision))
}
