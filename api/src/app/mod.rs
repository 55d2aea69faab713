//! Starting the api: `Foundation::open` binds the listener (port 0 in tests) and opens what the
//! api shares with a worker in the same process; `Application::build` takes that and the back
//! end its caller chose (Redis, or an embedded worker: the `grove` package composes that mode),
//! assembles state and layers; `run_until` serves until the shutdown future resolves.

mod foundation;
mod serve;

pub use foundation::{BackEnd, Foundation};

use crate::{
    admin,
    error::ApiError,
    request_id, routes,
    state::{AppState, Inner},
    x402::{
        chain::{ChainReader, ChainWallets, Finality, SelfSettler, SettlerOptions},
        facilitator::{Facilitator, FacilitatorTransport, HttpFacilitator, LocalFacilitator},
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
    /// The admin listener would be reachable beyond loopback, or serve production, unguarded.
    #[error("the admin listener refuses to start: {0}")]
    AdminUnguarded(String),
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

struct Admin {
    listener: TcpListener,
    addr: SocketAddr,
    router: Router,
}

pub struct Application {
    listener: TcpListener,
    router: Router,
    local_addr: SocketAddr,
    /// The admin listener and what it serves (`crate::admin`), unless `ADMIN_ADDR=off`.
    admin: Option<Admin>,
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
            admin: admin_listener,
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
                    FacilitatorTransport::of(&config),
                )?,
                None => HttpFacilitator::new(
                    url,
                    config.facilitator_auth.clone(),
                    FacilitatorTransport::of(&config),
                )?,
            }),
            None => Arc::new(LocalFacilitator {
                network: config.network,
            }),
        };
        let (settler, chain) = settlement(&config, facilitator, clock.clone(), &db).await?;
        // Smart-wallet payers' signatures are checked on chain (docs/smart-wallets.md).
        let wallets = match &config.settlement.base_rpc_url {
            Some(rpc) => Some(Arc::new(ChainWallets::new(rpc, config.network)?) as _),
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
        let admission = crate::paid::admission::Admission::new(config.call_deadline, &queue);
        completions.backstop(db.clone(), stop.subscribe());
        let claims = grove_common::ledger::Claims::new(db.clone(), config.write_batch);
        let outcomes = grove_common::ledger::Outcomes::new(db.clone(), config.write_batch);
        let state = AppState::new(Inner {
            config,
            schemas,
            published,
            sandbox_header,
            claims,
            outcomes,
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
            admission,
        });
        let follower = state.clone();
        let follow_until = stopped.clone();
        tokio::spawn(async move {
            (follower.admission)
                .follow(&follower.queue, follow_until)
                .await;
        });
        tokio::spawn(forget_idle_clients(state.clone(), stopped.clone()));
        tokio::spawn(crate::paid::rerun::run(state.clone(), stopped.clone()));
        tokio::spawn(crate::paid::reconcile::run(
            state.clone(),
            state.config.sweep_interval,
            stopped,
        ));
        let admin = admin_listener.map(|(listener, addr)| Admin {
            listener,
            addr,
            router: admin::router(state.clone()),
        });
        let router = routes::router(state.clone())
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::rate_limit::middleware,
            ))
            .layer(cors)
            .layer(CatchPanicLayer::custom(|_| {
                ApiError::internal("handler panicked").into_response()
            }))
            // Outside the rate limits and the panic catcher, so their 429s and 500s count too;
            // the request's id and span around all of it.
            .layer(axum::middleware::from_fn_with_state(
                state.metrics.clone(),
                crate::http_metrics::middleware,
            ));
        Ok(Self {
            listener,
            router,
            local_addr,
            admin,
            stop,
            liveness,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The admin listener's address (`ADMIN_ADDR`), unless it is off.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(|a| a.addr)
    }

    /// Serves the public port and the admin listener until `shutdown`; both stop on it.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let (stopping, stop_serving) = watch::channel(false);
        let signal = async move {
            shutdown.await;
            let _ = stopping.send(true);
            Ok::<(), io::Error>(())
        };
        let stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        // The peer's address reaches the rate limits (`crate::limits`) as `ConnectInfo`.
        let public = serve::public(self.listener, self.router, stopped(stop_serving.clone()));
        let admin = async {
            match self.admin {
                Some(admin) => {
                    axum::serve(admin.listener, admin.router)
                        .with_graceful_shutdown(stopped(stop_serving.clone()))
                        .await
                }
                None => Ok(()),
            }
        };
        let served = async { tokio::try_join!(signal, public, admin).map(|_| ()) };
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
    clock: Arc<dyn grove_common::clock::Clock>,
    db: &sea_orm::DatabaseConnection,
) -> Result<(Arc<dyn Settler>, Option<Arc<dyn AuthorizationReader>>), StartError> {
    let s = &config.settlement;
    if let Some(rpc) = &s.base_rpc_url {
        // Decisions read from this endpoint: it must be our network, with USDC on it (issue 25).
        let facts = ChainReader::new(rpc, config.network)?
            .check_serves_network()
            .await?;
        tracing::info!(
            chain_id = facts.chain_id,
            head = facts.head_number,
            network = config.network.display_name(),
            "BASE_RPC_URL serves the configured network"
        );
    }
    if s.mode == SettlementMode::SelfHosted
        && let (Some(rpc), Some(key)) = (&s.base_rpc_url, &s.settler_private_key)
    {
        let mut settler = SelfSettler::connect(rpc, key, SettlerOptions::from(s), config.network)
            .await?
            .with_finality(Finality::of(s));
        // Replicas on PostgreSQL share the settler key's nonce counter (docs/settlement.md).
        if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            settler = settler.with_nonces(Arc::new(crate::paid::SharedNonces::new(db.clone())));
        }
        let settler = Arc::new(settler);
        tracing::info!(settler = %settler.address(), "settling payments on chain ourselves");
        let reader: Arc<dyn AuthorizationReader> = Arc::new(settler.reader());
        return Ok((settler, Some(reader)));
    }
    let chain = match &s.base_rpc_url {
        Some(rpc) => Some(Arc::new(
            ChainReader::new(rpc, config.network)?.with_finality(Finality::of(s)),
        ) as Arc<dyn AuthorizationReader>),
        None => None,
    };
    let settler = Arc::new(ViaFacilitator {
        facilitator,
        local: config.settles_locally(),
        network: config.network,
        chain: chain.clone(),
        clock,
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
