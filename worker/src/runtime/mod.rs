//! Running the workers (coaching jobs, review jobs, and the cron sweeper): against Redis (the
//! `worker` binary, any number of processes) or in-process on the memory backend (embedded).
//!
//! Against Redis each consumer is supervised (`supervise`): a Redis error kills an apalis-redis
//! consumer for good, so it is rebuilt, with backoff, under a new name; one that cannot get
//! back within the recovery limit stops the process with an error, for its supervisor to
//! restart it. Beside the consumers, the takeover loop (`takeover`) re-runs calls whose
//! process died, straight from the database. A process that loses its liveness lock stops at
//! once with an error: the others are taking its calls over.

mod database;
mod report;
mod supervise;
pub mod takeover;

pub use crate::in_flight::InFlight;

use crate::{
    jobs::{Deps, coaching_job},
    review::{review_job, sweep::sweep_tick},
};
use apalis::prelude::*;
use grove_common::{
    consumers::{ConsumerHandle, Consumers, Peers},
    jobs::{self, CoachingJob, ReviewJob},
    queue::{JobQueue, MemoryStorages},
};
use std::{future::Future, str::FromStr, sync::Arc, time::Duration};
use supervise::Lane;
use tokio::sync::watch;

/// How long a consumer may go without getting back to Redis before the process gives up.
pub const DEFAULT_RECOVERY_LIMIT: Duration = Duration::from_secs(60);

/// At shutdown, how long the jobs in hand may take to finish (`WORKER_DRAIN_S`): past it the
/// process stops anyway, and its calls are taken over by the others (a second model call). Longer
/// than the longest job (a coaching call is bounded by `CALL_DEADLINE_S`, 60 s by default), and
/// shorter than the supervisor's grace period (`terminationGracePeriodSeconds` 90 s in
/// `deploy/kubernetes`).
pub const DEFAULT_DRAIN_LIMIT: Duration = Duration::from_secs(70);

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("worker: {0}")]
    Worker(String),
    #[error("sweep schedule: {0}")]
    Schedule(String),
    #[error("the database did not come back within {limit:?}: {error}")]
    DatabaseGaveUp { limit: Duration, error: String },
    #[error("the {lane} consumer could not get back to Redis within {limit:?}: {error}")]
    GaveUp {
        lane: &'static str,
        limit: Duration,
        error: String,
    },
}

/// How the Redis consumers recover, and where they report.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// A consumer failing for this long without one heartbeat stops the process.
    pub recovery_limit: Duration,
    /// The database unreachable for this long (its liveness lock not taken again) stops the
    /// process.
    pub database_limit: Duration,
    /// At shutdown, how long the jobs in hand may take.
    pub drain_limit: Duration,
    pub consumers: Arc<Consumers>,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            recovery_limit: DEFAULT_RECOVERY_LIMIT,
            database_limit: DEFAULT_RECOVERY_LIMIT,
            drain_limit: DEFAULT_DRAIN_LIMIT,
            consumers: Arc::default(),
        }
    }
}

/// A cron schedule firing every `every` (1 to 59 seconds).
fn sweep_schedule(
    every: Duration,
) -> Result<apalis_cron::CronScheduler<cron::Schedule>, RuntimeError> {
    let secs = every.as_secs().clamp(1, 59);
    let schedule = cron::Schedule::from_str(&format!("*/{secs} * * * * *"))
        .map_err(|e| RuntimeError::Schedule(e.to_string()))?;
    Ok(apalis_cron::CronScheduler::new(schedule))
}

async fn until(mut stop: watch::Receiver<bool>) -> Result<(), std::io::Error> {
    let _ = stop.wait_for(|stopped| *stopped).await;
    Ok(())
}

/// Marks a consumer running at each successful registration or heartbeat with its backend.
fn heartbeats(health: ConsumerHandle) -> impl Fn(&WorkerContext, &Event) + Send + Sync + 'static {
    move |_, event| {
        if matches!(event, Event::HeartBeat) {
            health.beat();
        }
    }
}

/// The one builder chain of a job consumer: `handler` over `backend`, `deps.concurrency` jobs at a
/// time, with the worker's deps, reporting heartbeats to `health`, until `stopped` turns true.
/// (A macro: the chain's types differ per backend and handler, and apalis's bounds on them are
/// not worth restating.)
macro_rules! consumer {
    ($name:expr, $backend:expr, $deps:expr, $handler:expr, $health:expr, $stopped:expr) => {
        WorkerBuilder::new($name)
            .backend($backend)
            .concurrency($deps.concurrency)
            .data(Arc::clone($deps))
            .on_event(heartbeats($health))
            .build($handler)
            .run_until(until($stopped))
    };
}

/// The sweeper: `sweep_tick` every `every`, until `stopped` turns true.
fn sweeper(
    name: String,
    every: Duration,
    deps: Arc<Deps>,
    stopped: watch::Receiver<bool>,
) -> Result<impl Future<Output = Result<(), apalis::prelude::WorkerError>>, RuntimeError> {
    Ok(WorkerBuilder::new(name)
        .backend(sweep_schedule(every)?)
        .data(deps)
        .build(sweep_tick)
        .run_until(until(stopped)))
}

/// Runs every worker against Redis until `shutdown` resolves; in-flight jobs finish first.
pub async fn run_redis(
    client: redis::Client,
    namespace: &str,
    sweep_every: Duration,
    deps: Arc<Deps>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RuntimeError> {
    run_redis_with(
        client,
        namespace,
        sweep_every,
        deps,
        RedisOptions::default(),
        shutdown,
    )
    .await
}

/// `run_redis` with explicit recovery options. Returns an error when a consumer gave up (the
/// others are stopped first).
///
/// Shutdown is a drain: the consumers stop taking jobs, finish the ones they started (within
/// `drain_limit`), and hand back the ones they fetched and had not started; then the process
/// lets go of its liveness lock.
pub async fn run_redis_with(
    client: redis::Client,
    namespace: &str,
    sweep_every: Duration,
    deps: Arc<Deps>,
    options: RedisOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RuntimeError> {
    let (stop, stopped) = watch::channel(false);
    let stop = Arc::new(stop);
    let on_shutdown = Arc::clone(&stop);
    let (drain_from, drain_started) = tokio::sync::oneshot::channel::<tokio::time::Instant>();
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("stopping: taking no more jobs, finishing the ones in hand");
        let _ = drain_from.send(tokio::time::Instant::now());
        let _ = on_shutdown.send(true);
    });
    let drain_limit = options.drain_limit;
    // Resolves when the drain ran out of time (never before a shutdown).
    let drain_over = async move {
        match drain_started.await {
            Ok(at) => tokio::time::sleep_until(at + drain_limit).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::pin!(drain_over);
    let id = uuid::Uuid::new_v4().simple().to_string();
    // Set while the database is away: the consumers take no jobs (`database::keep`).
    let (pause, paused) = watch::channel(false);
    // The other workers' load, read each time this one reports its own (`report::load`).
    let (peers_read, peers) = watch::channel(Peers::Unknown);
    let lane = |kind: &'static str, queue: String, peers: Option<watch::Receiver<Peers>>| Lane {
        kind,
        base_name: format!("grove-{kind}-{id}"),
        client: client.clone(),
        queue,
        health: options.consumers.register(kind),
        limit: options.recovery_limit,
        stopped: stopped.clone(),
        stop: Arc::clone(&stop),
        paused: paused.clone(),
        peers,
    };
    let coaching = lane("coaching", jobs::coaching_queue(namespace), Some(peers))
        .run::<CoachingJob, _, _, _>(|name, backend, stopped, health| {
            consumer!(name, backend, &deps, coaching_job, health, stopped)
        });
    // Review jobs (a text each) end quickly; nobody reports them: turns are left as ever.
    let review = lane("review", jobs::review_queue(namespace), None).run::<ReviewJob, _, _, _>(
        |name, backend, stopped, health| {
            consumer!(name, backend, &deps, review_job, health, stopped)
        },
    );
    let database = database::keep(
        Arc::clone(&deps),
        pause,
        options.database_limit,
        options.consumers.register("database"),
        stopped.clone(),
    );
    let takeover = takeover::run(Arc::clone(&deps), stopped.clone());
    let sweeper = sweeper(
        format!("grove-sweeper-{id}"),
        sweep_every,
        Arc::clone(&deps),
        stopped.clone(),
    )?;
    tokio::spawn(report::load(
        Arc::clone(&deps),
        id.clone(),
        peers_read,
        stopped.clone(),
    ));
    tracing::info!(namespace, concurrency = deps.concurrency, "worker ready");
    let all = async { tokio::join!(coaching, review, sweeper, takeover) };
    let gave_up = async {
        match database.await {
            Err(e) => e,
            Ok(()) => std::future::pending().await,
        }
    };
    let (coaching, review, sweeper, ()) = tokio::select! {
        ended = all => ended,
        () = &mut drain_over => {
            tracing::warn!(running = InFlight::count(), ?drain_limit,
                "stopping with jobs still running: past the drain limit; their calls run again elsewhere");
            return Ok(());
        }
        e = gave_up => {
            // The database stayed away past the limit: the others have taken this process's
            // calls over. Stop everything at once (no drain) and exit non-zero.
            let _ = stop.send(true);
            options.consumers.all_dead(&e.to_string());
            return Err(e);
        }
    };
    // Jobs that outlived the consumer that took them (a consumer rebuilt after a Redis error,
    // a takeover run) finish within what is left of the drain.
    tokio::select! {
        () = InFlight::drain(drain_limit) => {}
        () = &mut drain_over => {}
    }
    coaching?;
    review?;
    sweeper.map_err(|e| RuntimeError::Worker(e.to_string()))
}

/// Starts in-process workers on the memory backend, consuming `storages`; they stop when
/// `shutdown` resolves. They report their health to `storages.consumers`, which the queue's
/// readiness check reads.
pub fn spawn_embedded(
    deps: Arc<Deps>,
    storages: MemoryStorages,
    sweep_every: Duration,
    shutdown: watch::Receiver<bool>,
) -> Result<(), RuntimeError> {
    let consumers = storages.consumers;
    // Memory backends send no heartbeats: `watch_embedded` reports these consumers running.
    let (coaching_health, review_health) =
        (consumers.register("coaching"), consumers.register("review"));
    let coaching = consumer!(
        "grove-coaching-embedded",
        storages.coaching,
        &deps,
        coaching_job,
        coaching_health.clone(),
        shutdown.clone()
    );
    let review = consumer!(
        "grove-review-embedded",
        storages.review,
        &deps,
        review_job,
        review_health.clone(),
        shutdown.clone()
    );
    tokio::spawn(takeover::run(Arc::clone(&deps), shutdown.clone()));
    let sweeper = sweeper(
        "grove-sweeper-embedded".into(),
        sweep_every,
        Arc::clone(&deps),
        shutdown.clone(),
    )?;
    let liveness = Arc::clone(&deps.liveness);
    let all = Arc::clone(&consumers);
    tokio::spawn(async move {
        liveness.lost().await;
        // The api stops with an error (`Application::run_until`); until then, not ready.
        all.all_dead("lost the liveness lock");
    });
    watch_embedded(coaching_health, coaching, shutdown.clone());
    watch_embedded(review_health, review, shutdown.clone());
    watch_embedded(consumers.register("sweeper"), sweeper, shutdown);
    tracing::info!("embedded workers ready (in-process queues)");
    Ok(())
}

/// Runs an in-process consumer, reporting it dead if it ends before shutdown (an in-process
/// queue cannot be rebuilt: readiness then tells the operator to restart the api).
fn watch_embedded<E: std::fmt::Display>(
    health: ConsumerHandle,
    consumer: impl Future<Output = Result<(), E>> + Send + 'static,
    shutdown: watch::Receiver<bool>,
) {
    health.running();
    tokio::spawn(async move {
        let ended = consumer.await;
        match ended {
            Ok(()) if *shutdown.borrow() => health.stopped(),
            Ok(()) => {
                tracing::error!("an embedded consumer ended before shutdown");
                health.dead("ended before shutdown");
            }
            Err(e) => {
                tracing::error!(error = %e, "an embedded consumer stopped");
                health.dead(&e.to_string());
            }
        }
    });
}

/// Convenience for the embedded mode: the queue to push to and the storages to consume.
pub fn memory_queue() -> (JobQueue, MemoryStorages) {
    JobQueue::memory()
}
