//! A paid-call test rig: the API on port 0 over a fresh database, a loopback model, a loopback
//! facilitator, a wallet that signs real EIP-3009 authorizations, and either the embedded
//! worker or Redis with in-process worker(s).

use crate::{
    TestApp, TestDb, default_env,
    facilitator::FakeFacilitator,
    llm::FakeLlm,
    pg_proxy::PgProxy,
    twilio::{self as twilio_fake, FakeTwilio},
    x402::{PayOptions, TestWallet},
};
use grove_common::{
    clock::{Clock, ManualClock},
    completion::Completions,
    config::Config,
    db,
    queue::{self, JobQueue},
    schema::SchemaRegistry,
};
use serde_json::Value;
use std::{collections::HashMap, sync::Arc};
use tokio::sync::watch;

pub const REDIS_URL: &str = "redis://127.0.0.1:6379";
pub use crate::twilio::AUTH_TOKEN as TWILIO_TOKEN;

#[derive(Clone)]
pub struct Options {
    /// Run jobs through Redis with this many in-process workers (0: embedded worker).
    pub redis_workers: usize,
    pub provider: &'static str,
    pub deadline_s: u64,
    /// Use the HTTP facilitator client against the fake (otherwise local verification).
    pub facilitator: bool,
    /// With the fake facilitator, read its chain through `BASE_RPC_URL` (`FakeFacilitator::
    /// rpc_url`), as production always has a chain; `false`: no chain at all.
    pub fake_chain: bool,
    /// Send SMS through the loopback Twilio (otherwise the outbox).
    pub twilio: bool,
    /// Start the clock here (quiet hours and follow-ups read it); None: now.
    pub clock_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Seconds the server's clock runs ahead of the real one (both its readings: a host whose
    /// clock drifted).
    pub clock_ahead_s: i64,
    pub extra_env: Vec<(String, String)>,
    /// Reach a PostgreSQL test database through a [`PgProxy`] (`PaidApp::db_proxy`), which can
    /// cut a statement's connection before or after the server runs it.
    pub db_proxy: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            redis_workers: 0,
            provider: "openai",
            deadline_s: 20,
            facilitator: true,
            fake_chain: true,
            twilio: false,
            clock_at: None,
            clock_ahead_s: 0,
            extra_env: vec![],
            db_proxy: false,
        }
    }
}

pub struct PaidApp {
    pub app: TestApp,
    pub clock: ManualClock,
    pub twilio: FakeTwilio,
    pub llm: FakeLlm,
    pub facilitator: FakeFacilitator,
    pub wallet: TestWallet,
    pub env: HashMap<String, String>,
    stop_workers: watch::Sender<bool>,
    pub db: TestDb,
    /// The proxy every connection to the database goes through (`Options::db_proxy`).
    pub db_proxy: Option<PgProxy>,
}

impl Drop for PaidApp {
    fn drop(&mut self) {
        let _ = self.stop_workers.send(true);
    }
}

pub fn namespace() -> String {
    format!("gt{}", rand::random::<u64>())
}

/// A publishing side (a worker's) and a subscribed side (an API process's) on one new namespace,
/// returned once the subscription is live (a probe's completion reaches its waiter): a new
/// subscription wakes every waiter once to look, and that wake-up must not be taken for a
/// completion under test.
pub async fn live_completions(
    client: &redis::Client,
) -> (
    grove_common::completion::Completions,
    grove_common::completion::Completions,
    String,
) {
    use grove_common::{completion::Completions, queue};
    let ns = namespace();
    let worker = Completions::redis(queue::redis_connection(client).await.expect("redis"), &ns);
    let api = Completions::redis(queue::redis_connection(client).await.expect("redis"), &ns);
    api.subscribe_redis(client.clone());
    let probe = uuid::Uuid::now_v7();
    let probe_waiter = api.waiter(probe);
    for _ in 0..100 {
        worker.notify(probe).await;
        let woken = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            probe_waiter.notified(),
        );
        if woken.await.is_ok() {
            return (worker, api, ns);
        }
    }
    panic!("the completion subscription never came up");
}

pub async fn spawn_paid(opts: Options) -> PaidApp {
    let db = TestDb::new().await;
    let llm = FakeLlm::start().await;
    let facilitator = FakeFacilitator::start().await;
    let twilio = FakeTwilio::start().await;
    let clock = ManualClock::new(opts.clock_at.unwrap_or_else(chrono::Utc::now));
    if opts.clock_at.is_some() {
        // Twilio's list dates its messages by the service's time, which the test moves.
        twilio.stamp_with(clock.clone());
    }
    let mut env = default_env();
    let db_proxy = match opts.db_proxy && db.url.starts_with("postgres") {
        true => Some(PgProxy::in_front_of(&db.url).await),
        false => None,
    };
    let database_url = match &db_proxy {
        Some(proxy) => proxy.url_for(&db.url),
        None => db.url.clone(),
    };
    env.insert("DATABASE_URL".into(), database_url);
    env.insert("LLM_PROVIDER".into(), opts.provider.into());
    if opts.provider == "anthropic" {
        env.insert("LLM_BASE_URL".into(), llm.anthropic_base());
        env.insert("LLM_API_KEY".into(), "test-key-anthropic".into());
    } else {
        env.insert("LLM_BASE_URL".into(), llm.openai_base());
    }
    env.insert("CALL_DEADLINE_S".into(), opts.deadline_s.to_string());
    env.insert("SWEEP_INTERVAL_S".into(), "1".into());
    if opts.facilitator {
        env.insert("X402_FACILITATOR_URL".into(), facilitator.url().to_owned());
        if opts.fake_chain {
            env.insert("BASE_RPC_URL".into(), facilitator.rpc_url());
            // The fake's chain is the network the rig sells on.
            if opts
                .extra_env
                .iter()
                .any(|(k, v)| k == "X402_NETWORK" && v == "base-sepolia")
            {
                facilitator.serve_chain(84532);
            }
        }
    }
    if opts.twilio {
        env.insert("SMS_PROVIDER".into(), "twilio".into());
        env.insert("TWILIO_ACCOUNT_SID".into(), twilio_fake::ACCOUNT_SID.into());
        env.insert("TWILIO_AUTH_TOKEN".into(), twilio_fake::AUTH_TOKEN.into());
        env.insert("TWILIO_FROM".into(), twilio_fake::FROM.into());
        env.insert("TWILIO_BASE_URL".into(), twilio.url().to_owned());
    }
    if opts.redis_workers > 0 {
        env.insert("REDIS_URL".into(), REDIS_URL.into());
        env.insert("QUEUE_NAMESPACE".into(), namespace());
    }
    for (k, v) in &opts.extra_env {
        env.insert(k.clone(), v.clone());
    }
    let config = Config::from_map(&env).expect("test configuration");
    let (stop_workers, stopped) = watch::channel(false);
    let served: Arc<dyn Clock> = match opts.clock_ahead_s {
        0 => Arc::new(clock.clone()),
        ahead => Arc::new(Ahead {
            clock: clock.clone(),
            by: chrono::TimeDelta::seconds(ahead),
        }),
    };
    for _ in 0..opts.redis_workers {
        spawn_redis_worker(config.clone(), stopped.clone(), served.clone()).await;
    }
    let app = crate::start_with_clock(config, served).await;
    PaidApp {
        app,
        clock,
        twilio,
        llm,
        facilitator,
        wallet: TestWallet::new(),
        env,
        stop_workers,
        db,
        db_proxy,
    }
}

/// A server clock running ahead of the real one: both its readings (`now`, which the test may
/// still move, and `wall`).
struct Ahead {
    clock: ManualClock,
    by: chrono::TimeDelta,
}

impl Clock for Ahead {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now() + self.by
    }
    fn wall(&self) -> chrono::DateTime<chrono::Utc> {
        grove_common::clock::wall() + self.by
    }
}

/// A Redis worker inside the test process, stopped when the rig is dropped.
pub async fn spawn_redis_worker(
    config: Config,
    mut stopped: watch::Receiver<bool>,
    clock: Arc<dyn Clock>,
) {
    let client =
        redis::Client::open(config.redis_url.as_ref().expect("redis").expose()).expect("client");
    let conn = db::connect(&config).await.expect("db");
    grove_migrations::run(&conn).await.expect("migrations");
    let liveness = db::liveness::Liveness::claim(&conn, &db::url(&config))
        .await
        .expect("liveness lock");
    let completions = Completions::redis(
        queue::redis_connection(&client).await.expect("redis"),
        &config.queue_namespace,
    );
    let jobs = JobQueue::redis(&client, &config.queue_namespace)
        .await
        .expect("queue");
    let gates = grove_common::health::Gates::start(
        conn.clone(),
        config.health,
        &grove_common::health::ProviderId::configured(&config),
    )
    .await
    .expect("health gates");
    let parts = grove_worker::Parts {
        db: conn,
        completions,
        schemas: Arc::new(SchemaRegistry::load().expect("schemas")),
        queue: jobs,
        clock,
        sweeps: Arc::default(),
        liveness,
        gates,
        metrics: Arc::default(),
    };
    let deps = grove_worker::deps(&config, parts).expect("deps");
    let (ns, sweep) = (config.queue_namespace.clone(), config.sweep_interval);
    tokio::spawn(async move {
        let shutdown = async move {
            while !*stopped.borrow() {
                if stopped.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ =
            grove_worker::runtime::run_redis(client, &ns, sweep, Arc::new(deps), shutdown).await;
    });
}

impl PaidApp {
    /// POSTs unpaid, expects 402, and returns the PAYMENT-REQUIRED header.
    pub async fn challenge(&self, path: &str, body: &Value) -> String {
        let r = self.app.post_json(path, body, &[]).await;
        assert_eq!(r.status(), 402, "expected a challenge for {path}");
        r.headers()["payment-required"]
            .to_str()
            .expect("ascii")
            .to_owned()
    }

    /// A signed v2 payment header for this request.
    pub async fn payment_for(&self, path: &str, body: &Value, opts: PayOptions) -> String {
        let challenge = self.challenge(path, body).await;
        self.wallet.pay(&challenge, opts)
    }

    /// Sends the request with a payment (and an optional Idempotency-Key).
    pub async fn send_paid(
        &self,
        path: &str,
        body: &Value,
        payment: &str,
        key: Option<&str>,
    ) -> reqwest::Response {
        let mut headers = vec![("payment-signature", payment)];
        if let Some(k) = key {
            headers.push(("idempotency-key", k));
        }
        self.app.post_json(path, body, &headers).await
    }

    /// Sends a paid request on its own task, so the test can act while it is in flight.
    pub fn spawn_paid_call(
        &self,
        path: &str,
        body: &Value,
        payment: &str,
    ) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
        let request = self
            .app
            .client
            .post(self.app.url(path))
            .header("content-type", "application/json")
            .header("payment-signature", payment)
            .body(body.to_string());
        tokio::spawn(request.send())
    }

    /// Challenge, sign, pay: the whole happy path in one call.
    pub async fn pay_and_call(
        &self,
        path: &str,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Response {
        let payment = self.payment_for(path, body, PayOptions::default()).await;
        self.send_paid(path, body, &payment, key).await
    }
}

/// Starts `binary(name)` with exactly `env` (plus PATH), its output discarded (set
/// `GROVE_TEST_PROCESS_LOGS` to a log filter, e.g. `info`, to see it while debugging a test).
pub fn start_process<'a>(
    name: &str,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> std::process::Child {
    let mut cmd = std::process::Command::new(crate::binary(name));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "RUST_LOG",
            std::env::var("GROVE_TEST_PROCESS_LOGS").unwrap_or_else(|_| "warn".into()),
        )
        // Processes run side by side: an api's admin listener on a port of its own unless
        // `env` says otherwise.
        .env("ADMIN_ADDR", "127.0.0.1:0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let quiet = std::env::var_os("GROVE_TEST_PROCESS_LOGS").is_none();
    if quiet {
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
    }
    cmd.spawn().unwrap_or_else(|e| panic!("{name} starts: {e}"))
}

impl PaidApp {
    /// Starts a separate `worker` process with this rig's configuration (queue tests kill it).
    pub fn start_worker_process(&self) -> std::process::Child {
        self.start_worker_process_with(&[])
    }

    /// `start_worker_process` with more variables (the worker's own settings).
    pub fn start_worker_process_with(&self, extra: &[(&str, &str)]) -> std::process::Child {
        let env = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        start_process("worker", env.chain(extra.iter().copied()))
    }
}
