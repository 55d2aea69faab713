//! Job handlers. Each is a plain async function over a job from `grove_common::jobs`; its side
//! effects are keyed so that at-least-once delivery does them once.

use crate::coaching::{Engine, Outcome};
use crate::leases::Held;
use crate::sms::SmsProvider;
use apalis::prelude::Data;
use grove_common::{
    clock::Clock,
    completion::Completions,
    db::{
        calls::{self, Finisher, LEASE_RENEW_EVERY, Runner},
        entities::call,
        liveness::Liveness,
        outage,
    },
    jobs::{CoachingJob, Started},
    ledger::{self, CallStatus, Start},
    load::Meter,
    queue::JobQueue,
};
use sea_orm::DatabaseConnection;
use std::{future::Future, pin::Pin, sync::Arc, time::Duration};
use tracing::Instrument;
use uuid::Uuid;

/// What a worker needs to run jobs.
pub struct Deps {
    pub db: DatabaseConnection,
    /// Runs' starts and results, in shared statements when they queue on PostgreSQL.
    pub runs: ledger::Runs,
    pub completions: Completions,
    /// `None` when no model provider is configured: coaching jobs fail (and the API never sells
    /// them in that state).
    pub engine: Option<Engine>,
    pub sms: Arc<dyn SmsProvider>,
    /// Quiet hours, consent age and follow-up timing read this clock (tests move it).
    pub clock: Arc<dyn Clock>,
    /// For the sweeper and delayed follow-ups.
    pub queue: JobQueue,
    pub public_base_url: String,
    /// Where the SMS provider posts delivery reports (None for the outbox: it has none).
    pub status_callback: Option<String>,
    /// The sweeper's passes, for `/metrics`.
    pub sweeps: Arc<grove_common::jobs::SweepStats>,
    /// This process's liveness lock: its runs' leases name it, and it tells which other
    /// processes died (their calls are taken over at once).
    pub liveness: Arc<Liveness>,
    /// Jobs of one kind this process runs at once (`WORKER_CONCURRENCY`).
    pub concurrency: usize,
    /// This process's coaching load (jobs held, runs finished and their times), which
    /// admission before payment reads (`grove_common::load`).
    pub load: Arc<Meter>,
    /// The leases of this process's runs, renewed together (`crate::leases`).
    pub leases: Arc<crate::leases::Leases>,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The database is unreachable: let the queue retry the job later.
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// The job's task panicked; the queue retries it.
    #[error("job panicked: {0}")]
    Panicked(String),
}

/// How long a duplicate delivery waits on a run that holds a live lease before leaving the
/// call to it. The wait ends early when that run finishes (nothing left to do) or its lease
/// lapses (its worker died: this delivery takes over).
const WAIT_FOR_LIVE_RUN: Duration = Duration::from_secs(300);
const LIVE_RUN_POLL: Duration = Duration::from_millis(250);

pub async fn coaching_job(job: CoachingJob, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let span = tracing::info_span!(
        "job.coaching",
        otel.kind = "consumer",
        call_id = %job.call_id,
        request_id = %job.request_id,
        messaging.system = "redis",
        messaging.operation.type = "process",
    );
    // The paid call's trace, continued from the api that pushed the job.
    grove_common::telemetry::continue_trace(&span, job.trace.as_deref());
    let deps: Arc<Deps> = Arc::clone(&deps);
    let _slot = deps.load.enter();
    // Boxed: passed by value, the run's future would be stored twice while it waits on the
    // model, once in this future's argument slot and once in the task `detached` spawns
    // (21 KiB a call in flight, issue 31).
    detached(Box::pin(run_coaching(job, deps).instrument(span))).await
}

/// Runs a job on its own task, so that a queue consumer that dies (Redis went away) and is
/// rebuilt does not cancel the work in hand: the job finishes and stores its result, and its
/// redelivery finds it done.
pub async fn detached(
    job: impl Future<Output = Result<(), JobError>> + Send + 'static,
) -> Result<(), JobError> {
    let guard = crate::in_flight::InFlight::enter();
    tokio::spawn(async move {
        let _guard = guard;
        job.await
    })
    .await
    .map_err(|e| JobError::Panicked(e.to_string()))?
}

/// A coaching job's work, without the queue's wrapper (`coaching_job`): start the run (or take
/// the one the api started for this process), do it, store its outcome.
pub async fn run_coaching(mut job: CoachingJob, deps: Arc<Deps>) -> Result<(), JobError> {
    // The api only starts runs for the worker beside it; any other job starts its own.
    let own = |s: &Started| s.runner.process == deps.liveness.key();
    // Taken, not cloned: the job and its copy of the call would both be held through the run.
    if let Some(started) = job.started.take().filter(own) {
        return Box::pin(run_pre_started(&deps, started)).await;
    }
    let run = Uuid::now_v7();
    let give_up = tokio::time::Instant::now() + WAIT_FOR_LIVE_RUN;
    let (call, runner) = loop {
        // The process's key as of each try: after a database outage the process holds a new
        // one, and a takeover's write takes a call only under a lock still held
        // (`ledger::take_over`).
        let runner = Runner {
            run,
            process: deps.liveness.key(),
        };
        // Boxed phases before and after the model's answer are freed once done: the future
        // held while the model thinks is only as large as that wait (issue 31).
        match Box::pin(begin(&deps, job.call_id, runner)).await? {
            Start::Started(call) => break (call, runner),
            Start::Busy(_) if tokio::time::Instant::now() < give_up => {
                tokio::time::sleep(LIVE_RUN_POLL).await;
            }
            Start::Busy(_) => {
                tracing::info!("another run still holds the call; leaving it to that run");
                return Ok(());
            }
            Start::Idle(s) => {
                // A re-delivered job whose result is already stored does no work (no second
                // model call); a call whose payment is not settled never runs.
                if s == CallStatus::Completed || s == CallStatus::Failed {
                    deps.completions.notify(job.call_id).await;
                } else {
                    tracing::info!(status = %s, "call is not runnable; dropping the job");
                }
                return Ok(());
            }
            Start::Missing => {
                tracing::warn!("job for an unknown call; dropping it");
                return Ok(());
            }
        }
    };
    Box::pin(run_started(&deps, *call, runner)).await
}

/// A run the api started for this process in the transaction that recorded the settlement
/// (`ledger::start_settled`). A job that waited in the queue for a good part of the lease renews
/// it first; if the lease is no longer its own (the call was taken over, or ended), another run
/// has the call and this job does nothing.
async fn run_pre_started(deps: &Deps, started: Started) -> Result<(), JobError> {
    let Started { runner, call, at } = started;
    if at.elapsed() >= LEASE_RENEW_EVERY
        && !calls::renew_lease(&deps.db, call.id, runner.run).await?
    {
        tracing::info!(
            "the run started for this job lost its lease while queued; leaving the call"
        );
        return Ok(());
    }
    run_started(deps, Arc::unwrap_or_clone(call), runner).await
}

/// Starts a run of the call: `pending → running`, or a takeover when the run holding it lapsed
/// its time lease or died with its process (its liveness lock is gone). `Busy` only while the
/// holder's process lives.
pub async fn begin(deps: &Deps, call_id: Uuid, runner: Runner) -> Result<Start, sea_orm::DbErr> {
    match deps.runs.start_attempt(call_id, runner).await? {
        Start::Busy(holder) => match holder.lease_process {
            Some(process)
                if process != runner.process
                    && !deps.liveness.is_alive(&deps.db, process).await? =>
            {
                tracing::warn!(
                    dead_process = process,
                    "the run holding the call died with its process; taking the call over"
                );
                ledger::take_over(&deps.db, call_id, &holder, runner).await
            }
            _ => Ok(Start::Busy(holder)),
        },
        other => Ok(other),
    }
}

/// Does the work of a run that holds the call's lease, and stores its outcome (only while it
/// still holds the lease: a run that was taken over leaves the call to the run that took it).
pub async fn run_started(
    deps: &Deps,
    mut call: call::Model,
    runner: Runner,
) -> Result<(), JobError> {
    let began = tokio::time::Instant::now();
    // The engine reads the stored request into its typed form and drops it: the row's copy is
    // not held through the wait on the model (issue 31).
    let stored = std::mem::take(&mut call.request);
    let call = &call;
    // Pinned where it is built: moved into `holding_lease` and pinned there, the model's answer
    // took its room twice in every waiting job (the argument and the pinned local, 1.9 KiB).
    let answer = std::pin::pin!(async {
        match &deps.engine {
            Some(engine) => engine.answer(&deps.db, call, stored).await,
            None => Ok(Outcome::Failed {
                reason: "no model provider configured".into(),
            }),
        }
    });
    let Some((outcome, _held)) = holding_lease(deps, runner, answer).await? else {
        tracing::warn!("the call's lease was taken over mid-run; stopping");
        return Ok(());
    };
    let by = Finisher::Run(runner.run);
    match outcome {
        Outcome::Completed {
            envelope,
            usage,
            model_calls,
            answer,
        } => {
            // A database blip (restart, failover) is waited out: the answer is paid for, and a
            // run that gave up here would make the next one call the model again. The lease is
            // still held (`_held`), so a new liveness key after the outage takes this run along.
            let stored = Box::pin(outage::retrying("store the call's result", || {
                let stored = ledger::Stored {
                    body: envelope.clone(),
                    tokens: (usage.input_tokens, usage.output_tokens),
                    model_calls,
                    answer: answer.clone(),
                };
                deps.runs.complete(call.id, by, stored)
            }))
            .await?;
            let Some(stored) = stored else {
                return lease_lost();
            };
            tracing::info!(
                model_calls,
                input_tokens = usage.input_tokens,
                output_tokens = usage.output_tokens,
                "coaching call completed"
            );
            deps.completions.completed(call.id, stored).await;
        }
        Outcome::Failed { reason } => {
            let failed = Box::pin(outage::retrying("store the call's failure", || {
                ledger::fail(&deps.db, call.id, by, &reason)
            }))
            .await?;
            if !failed {
                return lease_lost();
            }
            tracing::warn!(%reason, "coaching call failed");
            deps.completions.notify(call.id).await;
        }
    }
    // The slot's time is the run's and its outcome's: admission's estimate of when a queued
    // call finishes counts the store and the answer too, which a loaded machine or a busy
    // database makes a good part of each round (issue 31).
    deps.load.served(began.elapsed());
    Ok(())
}

fn lease_lost() -> Result<(), JobError> {
    tracing::warn!(
        "the call's lease was taken over before the outcome was stored; the run that took it stores its own"
    );
    Ok(())
}

/// Runs `work` while this process's renewer keeps the call's lease; None when the lease was
/// lost (another run took the call over after this one stalled), in which case the work is
/// abandoned. The hold comes back with the work's answer: the run keeps it while it stores its
/// outcome.
async fn holding_lease<T>(
    deps: &Deps,
    runner: Runner,
    mut work: Pin<&mut impl Future<Output = Result<T, sea_orm::DbErr>>>,
) -> Result<Option<(T, Held)>, JobError> {
    let held = deps.leases.hold(&deps.db, runner.run);
    // Held first, compared second: a reclaim that changes the key after this comparison finds
    // the run among those it moves (`runtime::database`), and one before it is seen here.
    if runner.process != deps.liveness.key() {
        Box::pin(move_to_new_key(deps, runner.run)).await;
    }
    tokio::select! {
        done = &mut work => Ok(Some((done?, held))),
        () = held.lost() => Ok(None),
    }
}

/// Moves a run whose start was answered after this process took a new liveness key (the start
/// was sent before a database outage, or waited through it): the runs held when the key changed
/// were moved then, this one was not yet held. Under the old key the others would take the call
/// over as a dead process's and ask the model again.
async fn move_to_new_key(deps: &Deps, run: Uuid) {
    let (key, runs) = (deps.liveness.key(), [run]);
    match outage::retrying("move a run to this process's new key", || {
        calls::adopt(&deps.db, &runs, key)
    })
    .await
    {
        Ok(moved) => tracing::warn!(
            moved,
            owner = key,
            "a run started under this process's old key: moved to its new one"
        ),
        Err(e) => tracing::error!(
            error = %e,
            "could not move a run started under this process's old key; another process may take it over"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size2<A, B, F: Future>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    fn size3<A, B, C, F: Future>(_: impl FnOnce(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    fn size4<A, B, C, D, F: Future>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A coaching job waiting on the model holds the job's future (`run_coaching`, and the
    /// queue's `coaching_job` around it) and the started run's (`run_started`, the model's
    /// answer inside it, `Engine::answer`); every phase before and after the wait has a box of its own, freed when
    /// done. A phase awaited inline puts its whole future into every call in flight (a lease
    /// renewal's query, a model answer's write; issue 31).
    #[test]
    fn a_job_waiting_on_the_model_holds_only_small_futures() {
        let job = size2(coaching_job);
        let coaching = size2(run_coaching);
        let started = size3(run_started);
        let answer = size4(crate::coaching::Engine::answer);
        println!(
            "coaching_job {job} B, run_coaching {coaching} B, run_started {started} B, answer {answer} B"
        );
        assert!(job <= 1024, "coaching_job's future is {job} bytes");
        assert!(
            coaching <= 1024,
            "run_coaching's future is {coaching} bytes"
        );
        // The model's answer is held once (it was twice, 4,984 B, when moved in and pinned).
        assert!(
            started <= 4 * 1024,
            "run_started's future is {started} bytes"
        );
        assert!(
            answer <= 3 * 1024,
            "Engine::answer's future is {answer} bytes"
        );
    }
}
