//! `Application::build` binds the listener (port 0 in tests) and assembles state and layers;
//! `run_until` serves until the shutdown future resolves.

use crate::{
    error::ApiError,
    render::Published,
    request_id, routes,
    state::{AppState, Inner},
    x402::{
        chain::{ChainReader, SelfSettler},
        facilitator::{Facilitator, HttpFacilitator, LocalFacilitator},
        settle::{AuthorizationReader, Settler, ViaFacilitator},
    },
};
use axum::{
    Router,
    http::{HeaderName, Method},
    response::IntoResponse,
};
use grove_common::{
    clock::{Clock, SystemClock},
    completion::Completions,
    config::{Config, SettlementMode},
    db::{self, liveness::Liveness},
    jobs::SweepStats,
    queue::JobQueue,
    sandbox,
    schema::SchemaRegistry,
    x402::headers,
};
use std::{future::Future, io, net::SocketAddr, sync::Arc};
use tokio::{net::TcpListener, sync::watch};
use tower_http::{
    catch_panic::CatchPanicLayer,
    cors::{Any, CorsLayer},
};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("could not bind {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error(transparent)]
    Schema(#[from] grove_common::schema::SchemaError),
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("queue: {0}")]
    Queue(#[from] grove_common::queue::QueueError),
    #[error("facilitator: {0}")]
    Facilitator(#[from] crate::x402::facilitator::FacilitatorError),
    #[error("settlement: {0}")]
    Chain(#[from] crate::x402::chain::ChainError),
    #[error("embedded worker: {0}")]
    Worker(String),
    #[error("REDIS_URL is not set and this build has no embedded worker")]
    NoQueue,
}

pub struct Application {
    listener: TcpListener,
    router: Router,
    local_addr: SocketAddr,
    /// Stops the embedded worker (if any) when the server stops.
    stop: watch::Sender<bool>,
    /// The embedded worker's liveness lock: if it is lost, the server stops with an error.
    liveness: Option<Arc<Liveness>>,
}

impl Application {
    pub async fn build(config: Config) -> Result<Self, StartError> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// As `build`, reading time from `clock` (tests move time for quiet hours and follow-ups).
    pub async fn build_with_clock(
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StartError> {
        let listener = TcpListener::bind(config.bind_addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.bind_addr,
                source,
            })?;
        let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.bind_addr,
            source,
        })?;
        let (stop, stopped) = watch::channel(false);
        let (router, liveness) = Self::router(config, clock, stopped).await?;
        Ok(Self {
            listener,
            router,
            local_addr,
            stop,
            liveness,
        })
    }

    /// The full router with its layers and running back end, without a listener.
    async fn router(
        config: Config,
        clock: Arc<dyn Clock>,
        stopped: watch::Receiver<bool>,
    ) -> Result<(Router, Option<Arc<Liveness>>), StartError> {
        let schemas = Arc::new(SchemaRegistry::load()?);
        sandbox::check_all()?;
        let published = Published::render(&config, &schemas)?;
        announce(&config);
        let db = db::connect(&config).await?;
        grove_migrations::run(&db).await?;
        let facilitator: Arc<dyn Facilitator> = match &config.facilitator_url {
            Some(url) => Arc::new(match &config.cdp {
                Some(cdp) => HttpFacilitator::with_cdp(
                    url,
                    crate::x402::cdp::CdpSigner::new(cdp.clone()),
                    config.facilitator_timeout,
                )?,
                None => HttpFacilitator::new(
                    url,
                    config.facilitator_auth.clone(),
                    config.facilitator_timeout,
                )?,
            }),
            None => Arc::new(LocalFacilitator),
        };
        let (settler, chain) = settlement(&config, facilitator).await?;
        let BackEnd {
            queue,
            completions,
            sweeps,
            liveness,
        } = back_end(&config, &db, &schemas, &clock, stopped.clone()).await?;
        let sandbox_header = config.sandbox_header();
        let cors = cors(&sandbox_header);
        let state = AppState::new(Inner {
            config,
            schemas,
            published,
            sandbox_header,
            db,
            queue,
            completions,
            settler,
            chain,
            reconcile: Default::default(),
            metrics: Default::default(),
            clock,
            sweeps,
            push_retries: crate::paid::push::Retries::new(stopped.clone()),
        });
        tokio::spawn(crate::paid::reconcile::run(
            state.clone(),
            state.config.sweep_interval,
            stopped,
        ));
        let router = routes::router(state)
            .layer(cors)
            .layer(CatchPanicLayer::custom(|_| {
                ApiError::Internal("handler panicked".into()).into_response()
            }))
            .layer(axum::middleware::from_fn(request_id::middleware));
        Ok((router, liveness))
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let served = axum::serve(self.listener, self.router).with_graceful_shutdown(shutdown);
        let lost = async {
            match &self.liveness {
                Some(l) => l.lost().await,
                None => std::future::pending().await,
            }
        };
        let served = tokio::select! {
            served = served => served,
            // Other processes may now take this one's calls over: stop running them and exit
            // with an error, for the supervisor to start a fresh process.
            () = lost => Err(io::Error::other(
                "lost the database connection holding the embedded worker's liveness lock",
            )),
        };
        let _ = self.stop.send(true);
        served
    }
}

/// Who moves the money (a facilitator, or our own settlement on chain), and what can read the chain
/// for reconciliation (`BASE_RPC_URL`, in either mode).
async fn settlement(
    config: &Config,
    facilitator: Arc<dyn Facilitator>,
) -> Result<(Arc<dyn Settler>, Option<Arc<dyn AuthorizationReader>>), StartError> {
    let s = &config.settlement;
    if s.mode == SettlementMode::SelfHosted
        && let (Some(rpc), Some(key)) = (&s.base_rpc_url, &s.settler_private_key)
    {
        let settler = Arc::new(SelfSettler::connect(rpc, key, s.timeout).await?);
        tracing::info!(settler = %settler.address(), "settling payments on chain ourselves");
        let reader: Arc<dyn AuthorizationReader> = settler.clone();
        return Ok((settler, Some(reader)));
    }
    let chain = match &s.base_rpc_url {
        Some(rpc) => Some(Arc::new(ChainReader::new(rpc)?) as Arc<dyn AuthorizationReader>),
        None => None,
    };
    let settler = Arc::new(ViaFacilitator {
        facilitator,
        local: config.settles_locally(),
    });
    Ok((settler, chain))
}

/// What the API talks to for jobs: the queue, the completion notifier and, with an in-process
/// worker, its sweeper's statistics and its liveness lock.
struct BackEnd {
    queue: JobQueue,
    completions: Completions,
    sweeps: Option<Arc<SweepStats>>,
    liveness: Option<Arc<Liveness>>,
}

/// The job queue and completion notifier: shared Redis, or an in-process worker.
async fn back_end(
    config: &Config,
    db: &sea_orm::DatabaseConnection,
    schemas: &Arc<SchemaRegistry>,
    clock: &Arc<dyn Clock>,
    stopped: watch::Receiver<bool>,
) -> Result<BackEnd, StartError> {
    if let Some(url) = &config.redis_url {
        let client = redis::Client::open(url.expose())?;
        let queue = JobQueue::redis(&client, &config.queue_namespace).await?;
        let completions = Completions::redis(
            grove_common::queue::redis_connection(&client).await?,
            &config.queue_namespace,
        );
        completions.subscribe_redis(client);
        tracing::info!("jobs go to Redis; run `worker` processes to execute them");
        return Ok(BackEnd {
            queue,
            completions,
            sweeps: None,
            liveness: None,
        });
    }
    #[cfg(feature = "embedded-worker")]
    {
        let completions = Completions::local();
        let liveness = Liveness::claim(db, &db::url(config))
            .await
            .map_err(|e| StartError::Worker(e.to_string()))?;
        let (queue, storages) = grove_worker::runtime::memory_queue();
        let parts = grove_worker::Parts {
            db: db.clone(),
            completions: completions.clone(),
            schemas: Arc::clone(schemas),
            queue: queue.clone(),
            clock: Arc::clone(clock),
            sweeps: Arc::default(),
            liveness: Arc::clone(&liveness),
        };
        let sweeps = Arc::clone(&parts.sweeps);
        let deps =
            grove_worker::deps(config, parts).map_err(|e| StartError::Worker(e.to_string()))?;
        grove_worker::runtime::spawn_embedded(
            Arc::new(deps),
            storages,
            config.sweep_interval,
            stopped,
        )
        .map_err(|e| StartError::Worker(e.to_string()))?;
        Ok(BackEnd {
            queue,
            completions,
            sweeps: Some(sweeps),
            liveness: Some(liveness),
        })
    }
    #[cfg(not(feature = "embedded-worker"))]
    {
        let _ = (db, schemas, clock, stopped);
        Err(StartError::NoQueue)
    }
}

/// Browsers and agent runtimes in browsers must be able to read the payment headers.
fn cors(sandbox_header: &str) -> CorsLayer {
    let name = |s: &str| HeaderName::from_bytes(s.as_bytes()).ok();
    let allow: Vec<HeaderName> = [
        "content-type",
        headers::PAYMENT_SIGNATURE,
        headers::X_PAYMENT,
        "idempotency-key",
        sandbox_header,
        request_id::HEADER,
        // MCP's streamable HTTP transport (`/mcp`).
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    ]
    .into_iter()
    .filter_map(name)
    .collect();
    let expose: Vec<HeaderName> = [
        headers::PAYMENT_REQUIRED,
        headers::PAYMENT_RESPONSE,
        headers::X_PAYMENT_RESPONSE,
        "idempotent-replay",
        "retry-after",
        request_id::HEADER,
    ]
    .into_iter()
    .filter_map(name)
    .collect();
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers(allow)
        .expose_headers(expose)
}

/// Says loudly at start-up which development defaults are active.
fn announce(config: &Config) {
    match config.pay_to {
        None => {
            tracing::warn!("X402_PAY_TO is not set: paid endpoints answer 503 payments_disabled")
        }
        Some(_) if config.settles_locally() => tracing::warn!(
            "DEVELOPMENT: no X402_FACILITATOR_URL, payments are verified locally and recorded unsettled; no money moves"
        ),
        Some(_) => {}
    }
    if config.llm.is_none() {
        tracing::warn!("LLM_PROVIDER is not set: paid coaching calls answer 503 unavailable");
    }
    if config.sms_provider == grove_common::config::SmsProviderKind::Outbox {
        tracing::warn!(
            "DEVELOPMENT: SMS_PROVIDER=outbox, review-request messages are stored and logged, never sent"
        );
    }
}
