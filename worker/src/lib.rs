//! Grove's job workers: coaching jobs (prompt, model call, validation, re-ask), their provider
//! clients, and the runtime that runs them against Redis or in-process.

pub mod coaching;
pub mod doctor;
pub mod envelope;
pub mod health;
pub mod in_flight;
pub mod jobs;
pub mod leases;
pub mod llm;
pub mod log_text;
pub mod prompts;
pub mod retry;
pub mod review;
pub mod runtime;
pub mod settings;
pub mod sms;

use grove_common::{
    clock::{Clock, SystemClock},
    completion::Completions,
    config::{Config, SmsProviderKind},
    db,
    health::{Gates, ProviderId},
    queue::{self, JobQueue},
    schema::SchemaRegistry,
};
use jobs::Deps;
use std::{future::Future, sync::Arc};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(
        "REDIS_URL is not set: a separate worker needs the shared Redis queue (without it, the api runs jobs in-process)"
    )]
    NoQueue,
    #[error("could not connect to Redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("schemas: {0}")]
    Schema(#[from] grove_common::schema::SchemaError),
    #[error("model provider: {0}")]
    Llm(#[from] llm::LlmError),
    #[error("configuration: {0}")]
    Config(#[from] grove_common::config::ConfigError),
    #[error(transparent)]
    Runtime(#[from] runtime::RuntimeError),
    #[error("SMS provider: {0}")]
    Sms(#[from] sms::SmsError),
    #[error("queue: {0}")]
    Queue(#[from] queue::QueueError),
    #[error("health endpoint: {0}")]
    Health(std::io::Error),
    #[error("liveness lock: {0}")]
    Liveness(#[from] db::liveness::LivenessError),
}

/// Everything a worker needs besides configuration.
pub struct Parts {
    pub db: sea_orm::DatabaseConnection,
    pub completions: Completions,
    pub schemas: Arc<SchemaRegistry>,
    pub queue: JobQueue,
    pub clock: Arc<dyn Clock>,
    pub sweeps: Arc<grove_common::jobs::SweepStats>,
    /// This process's liveness lock (`db::liveness::Liveness::claim`), held while it runs jobs.
    pub liveness: Arc<db::liveness::Liveness>,
    /// The providers' health gates (`Gates::start` with `ProviderId::configured`): the jobs
    /// report outcomes to them, and this process probes the open ones.
    pub gates: Gates,
    /// This process's metrics (shared with the api in the embedded mode): model and SMS series.
    pub metrics: Arc<grove_common::metrics::Metrics>,
}

/// Builds the worker's dependencies: the model engine and SMS provider from configuration.
pub fn deps(config: &Config, parts: Parts) -> Result<Deps, WorkerError> {
    let Parts {
        db,
        completions,
        schemas,
        queue,
        clock,
        sweeps,
        liveness,
        gates,
        metrics,
    } = parts;
    let engine = match (&config.llm, ProviderId::of_model(config)) {
        (Some(llm_config), Some(gate)) => {
            llm_config.require_key()?;
            let provider: Arc<dyn llm::LlmProvider> = Arc::new(llm::Metered::new(
                llm::from_config(llm_config, llm::RetryPolicy::LLM)?,
                Arc::clone(&metrics),
            ));
            gates.watch(
                gate.clone(),
                Arc::new(llm::probe::LlmProbe(Arc::clone(&provider))),
            );
            let engine =
                coaching::Engine::new(provider, schemas, llm_config.provider, config.call_deadline);
            Some(engine.with_health(gates.clone(), gate))
        }
        _ => None,
    };
    let mut sms: Arc<dyn sms::SmsProvider> =
        Arc::new(sms::Metered::new(sms::from_config(config)?, metrics));
    if let Some(gate) = ProviderId::of_sms(config) {
        gates.watch(gate.clone(), Arc::new(sms::SmsProbe(Arc::clone(&sms))));
        sms = Arc::new(sms::Watched::new(sms, gates, gate));
    }
    // Delivery reports only exist for a real provider; the outbox has none.
    let load = Arc::clone(queue.meter());
    // A job waits on the model; the provider's own cap, if lower, is what runs at once.
    let model_cap = config.llm.as_ref().and_then(|l| l.max_concurrency);
    load.set_capacity(model_cap.map_or(config.worker_concurrency, |m| {
        m.min(config.worker_concurrency)
    }));
    let status_callback = (config.sms_provider == SmsProviderKind::Twilio)
        .then(|| config.absolute(grove_common::catalog::paths::SMS_STATUS_WEBHOOK));
    Ok(Deps {
        runs: grove_common::ledger::Runs::new(db.clone(), config.write_batch),
        db,
        completions,
        engine,
        sms,
        clock,
        queue,
        public_base_url: config.public_base_url.clone(),
        status_callback,
        sweeps,
        liveness,
        concurrency: config.worker_concurrency,
        load,
        leases: Arc::default(),
    })
}

/// The `worker` binary: run coaching and review jobs and the sweeper from Redis until
/// `shutdown` resolves, or until a queue consumer cannot get back to Redis (an error: the
/// process exits non-zero and its supervisor restarts it).
pub async fn run(
    config: &Config,
    settings: &settings::WorkerSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WorkerError> {
    let url = config.redis_url.as_ref().ok_or(WorkerError::NoQueue)?;
    let client = redis::Client::open(url.expose())?;
    let db = db::connect(config).await?;
    grove_migrations::run(&db).await?;
    let liveness = db::liveness::Liveness::claim(&db, &db::url(config)).await?;
    let completions = Completions::redis(
        queue::redis_connection(&client).await?,
        &config.queue_namespace,
    );
    let queue = JobQueue::redis(&client, &config.queue_namespace).await?;
    let gates = Gates::start(db.clone(), config.health, &ProviderId::configured(config)).await?;
    let parts = Parts {
        db,
        completions,
        schemas: Arc::new(SchemaRegistry::load()?),
        queue,
        clock: Arc::new(SystemClock),
        sweeps: Arc::default(),
        liveness,
        gates: gates.clone(),
        metrics: Arc::default(),
    };
    let metrics = Arc::clone(&parts.metrics);
    let deps = deps(config, parts)?;
    let options = runtime::RedisOptions {
        recovery_limit: settings.recovery_limit,
        database_limit: settings.database_limit,
        drain_limit: settings.drain_limit,
        ..Default::default()
    };
    let (stop_health, health_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(addr) = settings.health_addr {
        let watched = health::Watched {
            consumers: Arc::clone(&options.consumers),
            gates,
            metrics,
        };
        health::serve(addr, watched, async move {
            let _ = health_stopped.await;
        })
        .await
        .map_err(WorkerError::Health)?;
    }
    let ran = runtime::run_redis_with(
        client,
        &config.queue_namespace,
        config.sweep_interval,
        Arc::new(deps),
        options,
        shutdown,
    )
    .await;
    let _ = stop_health.send(());
    ran?;
    tracing::info!("worker stopped");
    Ok(())
}
