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

use super::{after_settled, ledger, push::enqueue};
use crate::{
    state::AppState,
    x402::{
        facilitator::SettleRequest,
        settle::{
            AuthorizationQuery, AuthorizationState, SentTransaction, SettleOutcome,
            means_nonce_used,
        },
    },
};
use alloy_primitives::{Address, U256};
use chrono::{DateTime, Duration, Utc};
use futures::future::join_all;
use grove_common::db::{
    calls::{self, status},
    entities::{call, payment},
    payments::status as pay_status,
};
use sea_orm::{
    ColumnTrait, Condition, DbErr, EntityTrait, ExprTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::{Alias, Expr},
};
use tokio::sync::watch;

/// Rows handled per pass, concurrently (each check may wait for the facilitator's timeout).
const BATCH: u64 = 16;
/// How long a check holds its row before another process may take it.
const LEASE: Duration = Duration::seconds(60);
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
}

/// Runs a pass at start-up, then every `interval` and at once when woken (`state.reconcile`),
/// until `stopped`.
pub async fn run(
    state: AppState,
    interval: std::time::Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let started_at = Utc::now();
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

/// One pass: every due unknown payment, then every stranded settled call. `started_at`: when
/// this process started.
pub async fn pass(state: &AppState, started_at: DateTime<Utc>) -> Result<PassStats, DbErr> {
    let mut stats = PassStats::default();
    let now = Utc::now();
    let due = payment::Entity::find()
        .filter(payment::Column::Status.eq(pay_status::UNKNOWN))
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
    stats.repushed = recover_stranded(state, now, started_at).await?;
    Ok(stats)
}

#[derive(Debug)]
enum Decision {
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

/// Checks one unknown payment, if this process wins its lease. `None`: another process has it.
async fn check(
    state: &AppState,
    p: payment::Model,
    now: DateTime<Utc>,
) -> Result<Option<Decision>, DbErr> {
    let leased = payment::Entity::update_many()
        .col_expr(payment::Column::NextCheckAt, Expr::value(Some(now + LEASE)))
        .col_expr(
            payment::Column::Checks,
            Expr::col(payment::Column::Checks).add(1),
        )
        .filter(payment::Column::Id.eq(p.id))
        .filter(payment::Column::Status.eq(pay_status::UNKNOWN))
        .filter(payment::Column::NextCheckAt.eq(p.next_check_at))
        .exec(&state.db)
        .await?;
    if leased.rows_affected != 1 {
        return Ok(None);
    }
    let decision = decide(state, &p).await;
    let call_id = p.call_id;
    match &decision {
        Decision::Settled(transaction) => {
            tracing::info!(%call_id, checks = p.checks + 1, "unknown settlement reconciled: settled");
            let outcome = SettleOutcome::Settled {
                transaction: transaction.clone(),
                local: false,
            };
            state.metrics.settlement("reconciled_settled");
            if ledger::record_outcome(&state.db, call_id, &outcome, now).await?
                && let Some(call) = calls::load(&state.db, call_id).await?
            {
                after_settled(state, &call).await?;
            }
        }
        Decision::Unsettled(reason) => {
            tracing::info!(%call_id, %reason, "unknown settlement reconciled: never paid");
            state.metrics.settlement("reconciled_unsettled");
            let outcome = SettleOutcome::Refused {
                reason: reason.clone(),
            };
            ledger::record_outcome(&state.db, call_id, &outcome, now).await?;
            grove_common::db::phone_marks::give_back(&state.db, call_id).await?;
            state.completions.notify(call_id).await;
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
                .filter(payment::Column::Status.eq(pay_status::UNKNOWN))
                .exec(&state.db)
                .await?;
        }
    }
    Ok(Some(decision))
}

async fn decide(state: &AppState, p: &payment::Model) -> Decision {
    let expired = p
        .valid_before
        .is_some_and(|before| Utc::now().timestamp() > before);
    let query = query_of(p);
    if let (Some(chain), Some(query)) = (&state.chain, &query) {
        match chain.authorization(query).await {
            Ok(AuthorizationState::Paid { transaction }) => return Decision::Settled(transaction),
            Ok(AuthorizationState::Void { reason }) => return Decision::Unsettled(reason),
            // Unused after it expired: USDC will never accept it now.
            Ok(AuthorizationState::Unused) if expired => {
                return Decision::Unsettled("authorization_expired_unused".into());
            }
            // Not used yet: settling again below may settle it now.
            Ok(AuthorizationState::Unused) => {}
            Err(e) => {
                tracing::warn!(error = %e, payment = %p.id, "authorization unreadable on chain")
            }
        }
    }
    let Some(request) = p
        .settle_request
        .clone()
        .and_then(|v| serde_json::from_value::<SettleRequest>(v).ok())
    else {
        return unknown("no settle request stored to re-post".into());
    };
    let sent = p.sent_tx.clone().map(|hash| SentTransaction {
        hash,
        raw: p.sent_tx_raw.clone(),
    });
    match state.settler.settle_again(&request, sent.as_ref()).await {
        SettleOutcome::Settled { transaction, .. } => Decision::Settled(transaction),
        // Used or canceled: only the chain tells which.
        SettleOutcome::Refused { reason } if means_nonce_used(&reason) => {
            match (&state.chain, &query) {
                (Some(chain), Some(query)) => match chain.authorization(query).await {
                    Ok(AuthorizationState::Paid { transaction }) => Decision::Settled(transaction),
                    Ok(AuthorizationState::Void { reason }) => Decision::Unsettled(reason),
                    Ok(AuthorizationState::Unused) => {
                        unknown(format!("re-post refused ({reason}) but unused on chain"))
                    }
                    Err(e) => unknown(e),
                },
                // Without a chain to ask, a used nonce is taken as our transfer (the payer could
                // have canceled instead: BASE_RPC_URL closes that); its transaction is the one
                // named earlier, if any.
                _ => Decision::Settled(sent.map(|s| s.hash).unwrap_or_default()),
            }
        }
        // A refusal of the re-post is no proof about the first attempt: the balance it
        // checks may be low because our transfer went through.
        SettleOutcome::Refused { reason } => unknown(format!("re-post refused: {reason}")),
        SettleOutcome::Unknown { reason, sent } => Decision::Unknown { reason, sent },
    }
}

fn unknown(reason: String) -> Decision {
    Decision::Unknown { reason, sent: None }
}

/// The chain question for a stored payment: its authorizer, nonce and value, paid to the payee
/// it signed for.
fn query_of(p: &payment::Model) -> Option<AuthorizationQuery> {
    let to = p
        .settle_request
        .as_ref()
        .and_then(|r| r.pointer("/paymentPayload/payload/authorization/to"))
        .and_then(serde_json::Value::as_str)
        .and_then(|to| to.parse::<Address>().ok());
    let query = (|| {
        Some(AuthorizationQuery {
            authorizer: p.payer.parse().ok()?,
            nonce: p.nonce.parse().ok()?,
            to: to?,
            value: U256::from_str_radix(&p.amount, 10).ok()?,
            since: u64::try_from((p.created_at - LOG_LOOKBACK).timestamp()).unwrap_or(0),
        })
    })();
    if query.is_none() {
        tracing::error!(payment = %p.id, "stored payer, nonce, amount or payee unreadable");
    }
    query
}

/// Settled calls whose job is lost: still `pending` well past the time their job should have
/// started (with the embedded worker: pending since before this process started), or `running`
/// under a time lease that lapsed. Push them again.
async fn recover_stranded(
    state: &AppState,
    now: DateTime<Utc>,
    started_at: DateTime<Utc>,
) -> Result<usize, DbErr> {
    // A job starts within moments of its push (a failed push is retried at once, `push`); a
    // whole call deadline of quiet is a lost one.
    let quiet = Duration::from_std(state.config.call_deadline).unwrap_or(Duration::seconds(60));
    let mut lost_before = now - quiet;
    if state.queue.in_process() {
        // The in-process queue died with the process that ran before this one.
        lost_before = Ord::max(lost_before, started_at);
    }
    let lease_until = Expr::col(Alias::new("lease_until"));
    let lost = Condition::any()
        .add(
            Condition::all()
                .add(call::Column::Status.eq(status::PENDING))
                .add(call::Column::UpdatedAt.lt(lost_before)),
        )
        .add(
            Condition::all()
                .add(call::Column::Status.eq(status::RUNNING))
                .add(lease_until.lt(now))
                // Once per lease period, not once per pass.
                .add(call::Column::UpdatedAt.lt(now - calls::LEASE)),
        );
    let stale = call::Entity::find()
        .filter(lost)
        .order_by_asc(call::Column::UpdatedAt)
        .limit(BATCH)
        .all(&state.db)
        .await?;
    let mut pushed = 0;
    for c in stale {
        // Take it for this period: touch `updated_at` only if no one else did.
        let taken = call::Entity::update_many()
            .col_expr(call::Column::UpdatedAt, Expr::value(now))
            .filter(call::Column::Id.eq(c.id))
            .filter(call::Column::Status.eq(c.status.as_str()))
            .filter(call::Column::UpdatedAt.eq(c.updated_at))
            .exec(&state.db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        tracing::warn!(call_id = %c.id, status = %c.status, "settled call's job is lost; pushing it again");
        if c.kind == super::Kind::ReviewRequest.as_str() {
            // Records the plan if the crash came before it, then pushes.
            after_settled(state, &c).await?;
            pushed += 1;
        } else if enqueue(state, c.id, &c.kind).await {
            pushed += 1;
        }
    }
    Ok(pushed)
}
