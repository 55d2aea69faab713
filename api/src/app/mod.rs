//! Starting the api: `Foundation::open` binds the listener (port 0 in tests) and opens what the
//! api shares with a worker in the same process; `Application::build` takes that and the back
//! end its caller chose (Redis, or an embedded worker: the `grove` package composes that mode),
//! assembles state and layers; `run_until` serves until the shutdown future resolves.

mod foundation;

pub use foundation::{BackEnd, Foundation};

use crate::{
    error::ApiError,
    request_id, routes,
    state::{AppState, Inner},
    x402::{
        chain::{ChainReader, ChainWallets, SelfSettler},
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
    config::{Config, SettlementMode},
    db::liveness::Liveness,
    health::{Gates, ProviderId},
    sandbox,
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
}

pub struct Application {
    listener: TcpListener,
    router: Router,
    local_addr: SocketAddr,
    /// Stops what runs beside the server (reconciliation, push retries, an embedded worker).
    stop: watch::Sender<bool>,
    /// The embedded worker's liveness lock: if it is lost, the server stops with an error.
    liveness: Option<Arc<Liveness>>,
}

impl Application {
    /// Assembles state and layers over `foundation`, handing jobs to `back_end`, and starts the
    /// reconciliation sweep.
    pub async fn build(foundation: Foundation, back_end: BackEnd) -> Result<Self, StartError> {
        let Foundation {
            config,
            listener,
            local_addr,
            db,
            schemas,
            published,
            clock,
            metrics,
            stop,
        } = foundation;
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
        // Smart-wallet payers' signatures are checked on chain (docs/smart-wallets.md).
        let wallets = match &config.settlement.base_rpc_url {
            Some(rpc) => Some(Arc::new(ChainWallets::new(rpc)?) as _),
            None => None,
        };
        let BackEnd {
            queue,
            completions,
            sweeps,
            liveness,
            gates,
        } = back_end;
        let gates = match gates {
            Some(gates) => gates,
            None => {
                Gates::start(db.clone(), config.health, &ProviderId::configured(&config)).await?
            }
        };
        let sandbox_header = config.sandbox_header();
        let cors = cors(&sandbox_header);
        let stopped = stop.subscribe();
        let limits = crate::limits::Limits::new(&config.limits);
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
            wallets,
            reconcile: Default::default(),
            metrics: crate::metrics::Metrics::new(metrics),
            limits,
            clock,
            sweeps,
            push_retries: crate::paid::retries::Retries::new(stopped.clone()),
            worker_process: liveness.as_ref().map(|l| l.key()),
            gates,
        });
        tokio::spawn(forget_idle_clients(state.clone(), stopped.clone()));
        tokio::spawn(crate::paid::rerun::run(state.clone(), stopped.clone()));
        tokio::spawn(crate::paid::reconcile::run(
            state.clone(),
            state.config.sweep_interval,
            stopped,
        ));
        let router = routes::router(state.clone())
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::rate_limit::middleware,
            ))
            .layer(cors)
            .layer(CatchPanicLayer::custom(|_| {
                ApiError::internal("handler panicked").into_response()
            }))
            // Outside the rate limits and the panic catcher, so their 429s and 500s count too.
            .layer(axum::middleware::from_fn_with_state(
                state.metrics.clone(),
                crate::http_metrics::middleware,
            ))
            .layer(axum::middleware::from_fn(request_id::middleware));
        Ok(Self {
            listener,
            router,
            local_addr,
            stop,
            liveness,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        // The peer's address reaches the rate limits (`crate::limits`).
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(self.listener, service).with_graceful_shutdown(shutdown);
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

/// Every minute, the rate limits forget clients whose budget is whole again.
async fn forget_idle_clients(state: AppState, mut stopped: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => state.limits.forget_idle(),
            _ = stopped.changed() => return,
        }
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
        // W3C trace context: a caller's trace continues here.
        grove_common::telemetry::TRACEPARENT,
        "tracestate",
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
