//! The `api` binary's library: the HTTP API (`grove_http`) over the back end this process uses.
//! With `REDIS_URL`, jobs go to Redis for separate `worker` processes; without it, the worker
//! (`grove_worker`) runs in this process on in-memory queues (feature `embedded`, the default).
//! This is the one place that knows both libraries.

use grove_common::{
    clock::{Clock, SystemClock},
    config::Config,
    doctor::{Check, Report},
};
use grove_http::{BackEnd, Foundation};
use std::sync::Arc;

pub use grove_http::Application;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Api(#[from] grove_http::StartError),
    #[cfg(feature = "embedded")]
    #[error("embedded worker: {0}")]
    Worker(#[from] grove_worker::WorkerError),
    #[error("REDIS_URL is not set and this build has no embedded worker")]
    NoQueue,
}

/// The api on the wall clock.
pub async fn build(config: Config) -> Result<Application, StartError> {
    build_with_clock(config, Arc::new(SystemClock)).await
}

/// As `build`, reading time from `clock` (tests move time for quiet hours and follow-ups).
pub async fn build_with_clock(
    config: Config,
    clock: Arc<dyn Clock>,
) -> Result<Application, StartError> {
    let foundation = Foundation::open(config, clock).await?;
    let back_end = match &foundation.config().redis_url {
        Some(url) => BackEnd::redis(url.expose(), &foundation.config().queue_namespace).await?,
        None => embedded(&foundation).await?,
    };
    Ok(Application::build(foundation, back_end).await?)
}

/// `api check`: the api's own dependencies, and the model's and Twilio's when this process runs
/// the jobs (no `REDIS_URL`); with Redis, the workers call them and `worker check` probes them.
pub async fn check(config: &Config) -> Report {
    let mut report = Report::default();
    report.extend(grove_http::doctor::checks(config).await);
    if config.redis_url.is_some() {
        report.push(Check::skip(
            "model and SMS",
            "jobs run in `worker` processes: run `worker check` where they run",
        ));
    } else {
        report.extend(embedded_providers(config).await);
    }
    report
}

#[cfg(feature = "embedded")]
async fn embedded_providers(config: &Config) -> Vec<Check> {
    grove_worker::doctor::providers(config).await
}

#[cfg(not(feature = "embedded"))]
async fn embedded_providers(_: &Config) -> Vec<Check> {
    vec![Check::fail(
        "jobs",
        "REDIS_URL is not set and this build has no embedded worker",
        "set REDIS_URL and run `worker` processes",
    )]
}

/// Starts the worker in this process, on in-memory queues; it stops with the server.
#[cfg(feature = "embedded")]
async fn embedded(foundation: &Foundation) -> Result<BackEnd, StartError> {
    use grove_common::{
        completion::Completions,
        db::{self, liveness::Liveness},
        health::{Gates, ProviderId},
    };
    use grove_worker::WorkerError;
    let config = foundation.config();
    let completions = Completions::local();
    let liveness = Liveness::claim(foundation.db(), &db::url(config))
        .await
        .map_err(WorkerError::from)?;
    // One set of gates for the api and the worker beside it: what a job sees is what the next
    // unpaid request is answered from.
    let gates = Gates::start(
        foundation.db().clone(),
        config.health,
        &ProviderId::configured(config),
    )
    .await
    .map_err(WorkerError::from)?;
    let (queue, storages) = grove_worker::runtime::memory_queue();
    let parts = grove_worker::Parts {
        db: foundation.db().clone(),
        completions: completions.clone(),
        schemas: Arc::clone(foundation.schemas()),
        queue: queue.clone(),
        clock: Arc::clone(foundation.clock()),
        sweeps: Arc::default(),
        liveness: Arc::clone(&liveness),
        gates: gates.clone(),
        metrics: Arc::clone(foundation.metrics()),
    };
    let sweeps = Arc::clone(&parts.sweeps);
    let deps = grove_worker::deps(config, parts)?;
    grove_worker::runtime::spawn_embedded(
        Arc::new(deps),
        storages,
        config.sweep_interval,
        foundation.stopped(),
    )
    .map_err(WorkerError::from)?;
    Ok(BackEnd {
        queue,
        completions,
        sweeps: Some(sweeps),
        liveness: Some(liveness),
        gates: Some(gates),
    })
}

#[cfg(not(feature = "embedded"))]
async fn embedded(_: &Foundation) -> Result<BackEnd, StartError> {
    Err(StartError::NoQueue)
}
