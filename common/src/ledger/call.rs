//! A call's moves: its run's start (and a takeover), its completion, its failure, and the free
//! re-run of a failed paid call. Each is one guarded write: the status it may move from is in
//! the UPDATE's WHERE (`FROM` of each move, checked against `CallStatus::may_become` in the
//! tests), so of racing writers one moves the call and the others learn that they did not.

use super::from;
use super::pg::{Completing, Finished};
use super::status::{CallStatus, PaymentStatus};
use crate::clock;
use crate::db::{
    calls::{
        Finisher, Holder, LEASE, ModelCallRecord, Runner, holder, lease_owner, lease_process,
        lease_until, load, load_result, model_call_insert,
    },
    entities::{call, payment, result},
    outage,
    write::{self, Done, Exec},
};
use chrono::{DateTime, SubsecRound, Utc};
use sea_orm::{
    ColumnTrait, Condition, DatabaseConnection, DbBackend, DbErr, EntityTrait, ExprTrait,
    QueryFilter, UpdateMany,
    sea_query::{Alias, Expr, OnConflict, Query},
};
use serde_json::Value;
use std::{future::Future, sync::Arc};
use uuid::Uuid;

/// What an attempt to start work on a call found.
#[derive(Debug)]
pub enum Start {
    /// This run holds the call's lease (until it lapses or the call ends): do the work.
    Started(Box<call::Model>),
    /// Another run holds a live time lease: it does the work, unless its process is gone
    /// (then `take_over`).
    Busy(Holder),
    /// Nothing to run: the call is in this status (completed, failed, or not yet, or never,
    /// runnable: `settling`, `unpaid`).
    Idle(CallStatus),
    /// No such call.
    Missing,
}

/// `pending → running` (or a takeover of a `running` call whose time lease lapsed), in one
/// statement, taking the lease for `runner`; one more attempt. Only `pending` calls start: the
/// API reopens a failed call to `pending` for its free re-run, and a call whose payment is
/// unsettled (`settling`) or refused (`unpaid`) never does.
pub async fn start_attempt(
    db: &DatabaseConnection,
    id: Uuid,
    runner: Runner,
) -> Result<Start, DbErr> {
    let update = start_update(id, runner, clock::wall());
    take(db, id, runner, || write::update_calls(db, update.clone())).await
}

/// `start_attempt`'s update: the lease for `runner` on call `id` if it is `pending`, or
/// `running` under a time lease that lapsed by `now`.
pub(super) fn start_update(
    id: Uuid,
    runner: Runner,
    now: DateTime<Utc>,
) -> UpdateMany<call::Entity> {
    let lapsed = Condition::any()
        .add(Expr::col(lease_until()).is_null())
        .add(Expr::col(lease_until()).lt(now));
    let [pending, running] = from::START;
    let runnable = Condition::any().add(call::Column::Status.eq(pending)).add(
        Condition::all()
            .add(call::Column::Status.eq(running))
            .add(lapsed),
    );
    starting(id, runner, now).filter(runnable)
}

/// Takes over a `running` call from `from`, a run whose process is known to be dead. A compare
/// and set on the lease as read: of several processes that saw the same dead run, one wins.
pub async fn take_over(
    db: &DatabaseConnection,
    id: Uuid,
    from: &Holder,
    runner: Runner,
) -> Result<Start, DbErr> {
    let same = |col: Alias, value: Option<sea_orm::Value>| match value {
        Some(v) => Expr::col(col).eq(v),
        None => Expr::col(col).is_null(),
    };
    let held_by_it = Condition::all()
        .add(call::Column::Status.is_in(from::TAKE_OVER))
        .add(same(
            lease_owner(),
            from.lease_owner.clone().map(Into::into),
        ))
        .add(same(lease_process(), from.lease_process.map(Into::into)));
    // `from`'s process was judged dead on a lookup made before this write. If the database
    // restarted between the two, every lock went with it and the holder may be about to move
    // its run to a new key: the taker's own lock, still held as the write runs, proves that no
    // restart came between (it would have dropped it; a new lock has a new key). A CI run
    // asked the model twice for three calls taken that way.
    let held_by_it = match db.get_database_backend() {
        DbBackend::Postgres => held_by_it.add(crate::db::liveness::lock_held(runner.process)),
        _ => held_by_it,
    };
    let update = starting(id, runner, clock::wall()).filter(held_by_it);
    take(db, id, runner, || write::update_calls(db, update.clone())).await
}

/// `settling → running` for `runner`, one more attempt: the run of a call whose settlement was
/// just learned, started in the same transaction that records it (`UPDATE … RETURNING` for
/// `write::Exec::update_calls`). The embedded api starts its in-process worker's run there, so a
/// paid call has one write transaction fewer (issue 12); the worker then does the work without
/// starting it again (`jobs::Started`).
/// Leases run on the real clock, as every lease does (`start_attempt`).
pub fn start_settled(id: Uuid, runner: Runner) -> UpdateMany<call::Entity> {
    starting(id, runner, clock::wall()).filter(call::Column::Status.is_in(from::START_SETTLED))
}

/// The update that gives `runner` the lease on call `id`, for the caller to add its condition.
fn starting(id: Uuid, runner: Runner, now: DateTime<Utc>) -> UpdateMany<call::Entity> {
    call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(CallStatus::Running))
        .col_expr(
            call::Column::Attempts,
            Expr::col(call::Column::Attempts).add(1),
        )
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(lease_until(), Expr::value(now + LEASE))
        .col_expr(lease_owner(), Expr::value(runner.run.to_string()))
        .col_expr(lease_process(), Expr::value(runner.process))
        .filter(call::Column::Id.eq(id))
}

/// What a start's `write` (the lease's update, sent again as it was if its answer was lost)
/// found: the call it started, or why not.
pub(super) async fn take<F, Fut>(
    db: &DatabaseConnection,
    id: Uuid,
    runner: Runner,
    write: F,
) -> Result<Start, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Vec<call::Model>, DbErr>>,
{
    // RETURNING: the started call comes back from the update itself, one round trip instead of
    // two on every run's start; on SQLite it runs where the paid path's writes do (issue 12).
    // The third outcome: the start may have been committed. Sent again, it finds the call
    // running under this run's own lease if it was; left as `Busy`, the run would be nobody's
    // until its lease lapsed, and the paid call waiting on it would time out.
    let (updated, after_lost) = outage::knowing("a run's start", outage::RIDE_OUT, write).await?;
    if let Some(started) = updated.into_iter().next() {
        return Ok(Start::Started(Box::new(started)));
    }
    let stored = outage::read_knowing(after_lost, "a started call", outage::RIDE_OUT, || {
        load(db, id)
    });
    Ok(match stored.await? {
        None => Start::Missing,
        Some(c) if c.status == CallStatus::Running => {
            let held = outage::read_knowing(after_lost, "a call's lease", outage::RIDE_OUT, || {
                holder(db, id)
            });
            match held.await? {
                Some(h) if after_lost && h.lease_owner == Some(runner.run.to_string()) => {
                    Start::Started(Box::new(c))
                }
                Some(h) => Start::Busy(h),
                None => Start::Missing,
            }
        }
        Some(c) => Start::Idle(c.status),
    })
}

/// Who may store a call's outcome, as the guard of its write: the run holding the lease only
/// while it still holds it (from `running`), anything else from the move's own `from`.
fn finishing(by: Finisher, from: &[CallStatus]) -> Condition {
    match by {
        Finisher::Run(owner) => Condition::all()
            .add(call::Column::Status.eq(CallStatus::Running))
            .add(Expr::col(lease_owner()).eq(owner.to_string())),
        Finisher::Unleased => Condition::all().add(call::Column::Status.is_in(from.to_vec())),
    }
}

/// Stores the result and completes the call in one transaction, with the model answer it was
/// made from when that is not on record yet (`answer`). If a result already exists (a re-run
/// raced a first run to the finish), the first one stands. Returns the call's stored result, or
/// None (nothing stored) when `by` may not complete the call (a run that no longer holds it, or
/// a call that is not in `from::COMPLETE`).
pub async fn complete(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    body: Value,
    tokens: (u64, u64),
    model_calls: u32,
    answer: Option<ModelCallRecord>,
) -> Result<Option<result::Model>, DbErr> {
    let write = |c: Arc<Completing>| async move { super::pg::complete(db, &c).await };
    let stored = Stored {
        body,
        tokens,
        model_calls,
        answer,
    };
    complete_with(db, call_id, by, stored, write).await
}

/// A result to store, as the run has it.
pub struct Stored {
    pub body: Value,
    pub tokens: (u64, u64),
    pub model_calls: u32,
    pub answer: Option<ModelCallRecord>,
}

/// `complete`, its statement on PostgreSQL sent by `write` (again, as it was, if its answer was
/// lost).
pub(super) async fn complete_with<F, Fut>(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    Stored {
        body,
        tokens: (input_tokens, output_tokens),
        model_calls,
        answer,
    }: Stored,
    write: F,
) -> Result<Option<result::Model>, DbErr>
where
    F: Fn(Arc<Completing>) -> Fut,
    Fut: Future<Output = Result<Finished, DbErr>>,
{
    // At the database's precision (microseconds): the result handed to a waiter with the
    // completion is then the one a later read returns.
    let now = clock::wall().trunc_subsecs(6);
    let mut stored = result::Model {
        call_id,
        body,
        input_tokens: i64::try_from(input_tokens).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(output_tokens).unwrap_or(i64::MAX),
        model_calls: i32::try_from(model_calls).unwrap_or(i32::MAX),
        created_at: now,
    };
    let written = if db.get_database_backend() == DbBackend::Postgres {
        let answer = answer.map(|rec| super::pg::Answer {
            run: rec.run,
            seq: rec.seq,
            outcome: rec.outcome,
            tokens: (
                i64::try_from(rec.tokens.0).unwrap_or(i64::MAX),
                i64::try_from(rec.tokens.1).unwrap_or(i64::MAX),
            ),
            http_attempts: i32::try_from(rec.http_attempts).unwrap_or(i32::MAX),
        });
        let completing = Arc::new(Completing {
            by,
            stored,
            answer,
            now,
        });
        // The third outcome: the result may have been stored. Written again, a result found
        // stored with the call completed is the call's (this run's own, or a re-run's that
        // raced it), not a lease lost.
        let written = outage::knowing("a call's result", outage::RIDE_OUT, || {
            write(Arc::clone(&completing))
        })
        .await?;
        // The batch that wrote it has let go of its copy by the time it answered.
        stored = Arc::try_unwrap(completing).map_or_else(|c| c.stored.clone(), |c| c.stored);
        written
    } else {
        let written = complete_in_transaction(db, call_id, by, &stored, answer, now);
        (written.await?, false)
    };
    match written {
        (Finished::NotHolder, true) => {
            outage::retrying("a call's result", || load_result(db, call_id)).await
        }
        (Finished::NotHolder, false) => Ok(None),
        (Finished::Stored, _) => Ok(Some(stored)),
        // A re-run raced a first run to the finish: the first result stands, and is read back.
        (Finished::Existing, _) => load_result(db, call_id)
            .await?
            .ok_or_else(|| DbErr::Custom("a result was neither stored nor found".into()))
            .map(Some),
    }
}

/// `complete`'s writes as a transaction (SQLite runs it on the caller's thread).
async fn complete_in_transaction(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    stored: &result::Model,
    answer: Option<ModelCallRecord>,
    now: DateTime<Utc>,
) -> Result<Finished, DbErr> {
    let finish = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(CallStatus::Completed))
        .col_expr(call::Column::Error, Expr::value(Option::<String>::None))
        .col_expr(call::Column::UpdatedAt, Expr::value(now))
        .col_expr(call::Column::CompletedAt, Expr::value(Some(now)))
        .filter(call::Column::Id.eq(call_id))
        .filter(finishing(by, &from::COMPLETE_UNLEASED));
    let store = result::Entity::insert(result::ActiveModel::from(stored.clone())).on_conflict(
        OnConflict::column(result::Column::CallId)
            .do_nothing()
            .to_owned(),
    );
    let answer = answer.map(|rec| model_call_insert(call_id, rec));
    crate::transaction!(db, async move |e| {
        if e.exec(&finish).await? == 0 {
            return Ok(Done::Rollback(Finished::NotHolder));
        }
        let inserted = e.exec(&store).await?;
        if let Some(answer) = &answer {
            e.exec(answer).await?;
        }
        Ok(Done::Commit(if inserted == 1 {
            Finished::Stored
        } else {
            Finished::Existing
        }))
    })
}

/// Records a failure after settlement: the payment stays credited to this call, and an
/// identical retry runs the work again for free. False when `by` may not fail the call (a run
/// that no longer holds it, or a call not in `from::FAIL`).
pub async fn fail(
    db: &DatabaseConnection,
    call_id: Uuid,
    by: Finisher,
    error: &str,
) -> Result<bool, DbErr> {
    let update = call::Entity::update_many()
        .col_expr(call::Column::Status, Expr::value(CallStatus::Failed))
        .col_expr(call::Column::Error, Expr::value(Some(error.to_owned())))
        .col_expr(call::Column::UpdatedAt, Expr::value(clock::wall()))
        .filter(call::Column::Id.eq(call_id))
        .filter(finishing(by, &from::FAIL));
    let (updated, after_lost) = outage::knowing("a call's failure", outage::RIDE_OUT, || {
        update.clone().exec(db)
    })
    .await?;
    if updated.rows_affected == 1 || !after_lost {
        return Ok(updated.rows_affected == 1);
    }
    // The third outcome: a call found failed with this very error was failed by the write whose
    // answer was lost, not taken over (its waiters are told, not left to poll).
    let stored = outage::retrying("a failed call", || load(db, call_id)).await?;
    Ok(stored.is_some_and(|c| c.status == CallStatus::Failed && c.error.as_deref() == Some(error)))
}

/// A failed call's identical retry: back to pending, exactly once among concurrent retries, and
/// only when its payment settled: the check is in the same statement, so a call whose settlement
/// was refused (or is still unknown) can never be re-run for free.
pub async fn reopen_failed(
    db: &DatabaseConnection,
    call_id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let paid = Query::select()
        .column(payment::Column::CallId)
        .from(payment::Entity)
        .and_where(payment::Column::CallId.eq(call_id))
        .and_where(payment::Column::Status.is_in(PaymentStatus::PAID))
        .to_owned();
    let res = call::Entity::update_many()
        .col_expr(call::Column::Status, CallStatus::Pending.into())
        .col_expr(call::Column::Runs, Expr::col(call::Column::Runs).add(1))
        .col_expr(call::Column::UpdatedAt, now.into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.is_in(from::REOPEN))
        .filter(call::Column::Id.in_subquery(paid))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// `settling → to` (`pending` or `unpaid`), only from `settling`: a settlement outcome decides a
/// call once. Inside the settlement's transaction.
pub(super) async fn settle(
    e: &impl Exec,
    call_id: Uuid,
    to: CallStatus,
    error: Option<String>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let from: &[CallStatus] = match to {
        CallStatus::Pending => &from::SETTLED,
        CallStatus::Unpaid => &from::UNPAID,
        _ => return Ok(false),
    };
    let update = call::Entity::update_many()
        .col_expr(call::Column::Status, to.into())
        .col_expr(call::Column::Error, error.into())
        .col_expr(call::Column::UpdatedAt, now.into())
        .filter(call::Column::Id.eq(call_id))
        .filter(call::Column::Status.is_in(from.to_vec()));
    Ok(e.exec(&update).await? == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every move's guard names only states the table lets move there.
    #[test]
    fn every_moves_guard_is_in_the_table() {
        use CallStatus::*;
        let moves: [(&str, &[CallStatus], CallStatus); 8] = [
            ("start", &from::START, Running),
            ("take over", &from::TAKE_OVER, Running),
            ("start settled", &from::START_SETTLED, Running),
            ("settled", &from::SETTLED, Pending),
            ("unpaid", &from::UNPAID, Unpaid),
            ("complete", &from::COMPLETE, Completed),
            ("fail", &from::FAIL, Failed),
            ("reopen", &from::REOPEN, Pending),
        ];
        for (name, from, to) in moves {
            for s in from {
                assert!(s.may_become(to), "{name}: {s} -> {to}");
            }
        }
        let mut unleased = from::COMPLETE.to_vec();
        unleased.extend(from::COMPLETE_AGAIN);
        assert_eq!(unleased, from::COMPLETE_UNLEASED);
    }
}
