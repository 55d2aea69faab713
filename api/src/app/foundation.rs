//! What the api stands on, opened before it starts: the `Foundation` it shares with a worker in
//! the same process, and the `BackEnd` its caller chose.

use super::StartError;
use crate::render::Published;
use grove_common::{
    clock::Clock,
    completion::Completions,
    config::Config,
    db::{self, liveness::Liveness},
    health::Gates,
    jobs::SweepStats,
    metrics::Metrics,
    queue::JobQueue,
    sandbox,
    schema::SchemaRegistry,
};
use sea_orm::DatabaseConnection;
use std::{net::SocketAddr, sync::Arc};
use tokio::{
    net::{TcpListener, TcpSocket},
    sync::watch,
};

/// What the api and a worker in the same process share, opened before either starts: the
/// listener (bound first, so a taken port fails fast), the migrated database, the schemas, the
/// clock, and the signal that stops everything this process runs beside the server.
pub struct Foundation {
    pub(super) config: Config,
    pub(super) listener: TcpListener,
    pub(super) local_addr: SocketAddr,
    /// The admin listener (`ADMIN_ADDR`), unless it is off.
    pub(super) admin: Option<(TcpListener, SocketAddr)>,
    pub(super) db: DatabaseConnection,
    pub(super) schemas: Arc<SchemaRegistry>,
    pub(super) published: Published,
    pub(super) clock: Arc<dyn Clock>,
    /// This process's metrics: the api's series and, with the embedded worker, its own.
    pub(super) metrics: Arc<Metrics>,
    /// Set when the server stops; dropped (which stops the listeners too) if it never starts.
    pub(super) stop: watch::Sender<bool>,
}

impl Foundation {
    /// Binds `BIND_ADDR` and `ADMIN_ADDR` (refused without a token beyond loopback or in
    /// production), loads and checks the schemas and sandbox samples, connects to the
    /// database and migrates it. `clock` is what quiet hours, consent age and follow-ups read
    /// (tests move it).
    pub async fn open(config: Config, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        let bind = |source| StartError::Bind {
            addr: config.bind_addr,
            source,
        };
        let listener = listen(config.bind_addr).map_err(bind)?;
        let local_addr = listener.local_addr().map_err(bind)?;
        let admin = bind_admin(&config).await?;
        let schemas = Arc::new(SchemaRegistry::load()?);
        sandbox::check_all()?;
        let published = Published::render(&config, &schemas)?;
        announce(&config);
        let db = db::connect(&config).await?;
        grove_migrations::run(&db).await?;
        let (stop, _) = watch::channel(false);
        Ok(Self {
            config,
            listener,
            local_addr,
            admin,
            db,
            schemas,
            published,
            clock,
            metrics: Arc::default(),
            stop,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    pub fn schemas(&self) -> &Arc<SchemaRegistry> {
        &self.schemas
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The registry an embedded worker records its model and SMS series in.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Turns true when the server stops (and closes if it is never built): what a worker
    /// running beside it stops on.
    pub fn stopped(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }
}

/// The accept queue asked of the kernel, which grants at most `net.core.somaxconn` (4,096 on
/// current kernels): an operator who raises that gets it without a setting of ours. Tokio's
/// `TcpListener::bind` asks for 1,024, and 10,000 agents connecting at once overflowed it by
/// thousands (`ListenOverflows`), each waiting out a SYN retransmit or failing to connect.
pub const LISTEN_BACKLOG: u32 = 65_535;

/// Binds `addr` (reusing a port in TIME_WAIT after a restart, as `TcpListener::bind` does) and
/// listens with [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The admin listener, when `ADMIN_ADDR` is not `off` and its tokens allow it to start.
async fn bind_admin(config: &Config) -> Result<Option<(TcpListener, SocketAddr)>, StartError> {
    let Some(addr) = config.admin.addr else {
        return Ok(None);
    };
    if let Some(refusal) = config.admin.refusal(config.app_env) {
        return Err(StartError::AdminUnguarded(refusal));
    }
    let bind = |source| StartError::Bind { addr, source };
    let listener = TcpListener::bind(addr).await.map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    if config.admin.tokens.is_empty() {
        tracing::warn!(%local, "ADMIN_TOKENS is not set: the admin API and console refuse every request; metrics are served");
    }
    Ok(Some((listener, local)))
}

/// What the api hands jobs to and hears back from: the queue, the completion notifier and,
/// with a worker in the same process, its sweeper's statistics and its liveness lock. The
/// api's caller builds it (`BackEnd::redis`, or the embedded worker of the `grove` package).
pub struct BackEnd {
    pub queue: JobQueue,
    pub completions: Completions,
    /// The in-process sweeper's passes, for `/metrics` (None when `worker` processes sweep).
    pub sweeps: Option<Arc<SweepStats>>,
    /// The in-process worker's liveness lock: when it is lost, the server stops with an error.
    pub liveness: Option<Arc<Liveness>>,
    /// The in-process worker's health gates, shared with the api (None: the api reads its own
    /// from the database, where `worker` processes write them).
    pub gates: Option<Gates>,
}

impl BackEnd {
    /// Jobs go to the shared Redis (`REDIS_URL`) for separate `worker` processes to run.
    pub async fn redis(url: &str, namespace: &str) -> Result<Self, StartError> {
        let client = redis::Client::open(url)?;
        let queue = JobQueue::redis(&client, namespace).await?;
        let completions = Completions::redis(
            grove_common::queue::redis_connection(&client).await?,
            namespace,
        );
        completions.subscribe_redis(client);
        tracing::info!("jobs go to Redis; run `worker` processes to execute them");
        Ok(Self {
            queue,
            completions,
            sweeps: None,
            liveness: None,
            gates: None,
        })
    }
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
