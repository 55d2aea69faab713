//! Typed configuration, read once at start-up from the environment (CONTRACT 10).
//!
//! Every variable is documented with its default in `.env.example`. Parsing fails fast with a
//! message naming the variable; secrets are wrapped so that they never reach a log line.

mod admin;
pub use admin::{AdminConfig, AdminToken, DEFAULT_ADMIN_ADDR};
mod cdp;
pub use cdp::{CDP_FACILITATOR_URL, CdpCredentials, CdpKey};
mod limits;
pub use limits::{ClientIp, Rate, RateLimits};
mod health;
pub use health::HealthPolicy;
mod http2;
pub use http2::Http2;
mod llm;
mod network;
pub use llm::{DEFAULT_TEMPERATURE, LlmConfig, LlmProviderKind, MaxTokensField, StructuredOutput};
pub use network::Network;
mod providers;
mod settlement;
use providers::read_twilio;
pub use providers::{SmsProviderKind, TwilioConfig};
pub use settlement::{SettlementConfig, SettlementMode};

use alloy_primitives::Address;
use std::{collections::HashMap, fmt, net::SocketAddr, str::FromStr, time::Duration};

/// A value that must never be printed (API keys, auth tokens, URLs with passwords).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The only way to read the value; grep for it when auditing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEnv {
    Development,
    Production,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Jobs of one kind a worker process runs at once by default. A coaching job spends nearly all
/// its time waiting on the model (5-60 s an answer), holding a few tens of KiB and no thread, so
/// the bound is memory and the provider's own limits (`LLM_MAX_CONCURRENCY`,
/// `LLM_TOKENS_PER_MIN`), not CPU: 4,096 at once is 410 calls a second with a 10 s model, and
/// a few hundred MiB (docs/performance.md). It was 32, which held a 10 s model to 3 calls a
/// second per process.
pub const DEFAULT_WORKER_CONCURRENCY: usize = 4096;

/// The most `WORKER_CONCURRENCY` accepts.
pub const MAX_WORKER_CONCURRENCY: usize = 100_000;

/// PostgreSQL connections a process keeps open by default (`DATABASE_POOL_SIZE`). A statement
/// holds one for a round trip, so a few serve hundreds of paid calls a second; more busy
/// connections are more server processes taking turns on the same cores. On `--bin paid`'s two
/// cores (issue 12), 4 and 8 connections per process made 669-685 paid calls/s, 16 made 643-660
/// and 32 made 615-616, PostgreSQL's CPU per call rising with each step.
pub const DEFAULT_DATABASE_POOL: u32 = 8;

/// Paid calls' claims (or settled outcomes, runs' starts, results) one PostgreSQL statement may
/// carry by default (`DATABASE_WRITE_BATCH`, `ledger::Claims`, `ledger::Outcomes`,
/// `ledger::Runs`): a lone write runs alone, and
/// writes that queue share a statement.
pub const DEFAULT_WRITE_BATCH: usize = 64;

/// SQLite's `synchronous` level in WAL mode (the README argues the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SqliteSync {
    /// A commit is durable once it is in the write-ahead log, against a crash of the process
    /// (what the fault tests do); the WAL is synced at each checkpoint, so a power loss or an OS
    /// crash may lose the last commits, never the database's consistency.
    #[default]
    Normal,
    /// Every commit syncs the write-ahead log: durable against power loss too, for about one
    /// disk sync per commit (0.85 ms each on this machine's disk).
    Full,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub app_env: AppEnv,
    pub bind_addr: SocketAddr,
    /// `ADMIN_ADDR` and `ADMIN_TOKENS`: the admin listener (metrics, admin API, console).
    pub admin: AdminConfig,
    /// Base of every absolute address we publish; never taken from a request's Host header.
    pub public_base_url: String,
    pub service_name: String,
    /// `None`: the embedded SQLite file.
    pub database_url: Option<Secret>,
    /// `SQLITE_SYNCHRONOUS`: how hard a SQLite commit is pushed to the disk (see `SqliteSync`).
    pub sqlite_sync: SqliteSync,
    /// `DATABASE_POOL_SIZE`: PostgreSQL connections this process keeps (1-256; SQLite has one).
    pub database_pool: u32,
    /// `DATABASE_WRITE_BATCH`: paid calls' claims, settled outcomes, runs' starts or results one
    /// PostgreSQL statement may carry (1-1024; 1 writes each alone).
    pub write_batch: usize,
    /// `None`: jobs run in-process on the embedded backend.
    pub redis_url: Option<Secret>,
    /// Prefix of every Redis key and channel, so several deployments can share one Redis.
    pub queue_namespace: String,
    /// `X402_NETWORK`: the chain payments are taken on (Base mainnet unless set).
    pub network: Network,
    /// `None`: paid endpoints answer 503 `payments_disabled`.
    pub pay_to: Option<Address>,
    /// `None`: payments are verified locally and recorded unsettled (development only).
    pub facilitator_url: Option<String>,
    pub facilitator_auth: Option<Secret>,
    /// `X402_FACILITATOR_HTTP2`: HTTP/1.1 or h2c to a plain `http://` facilitator.
    pub facilitator_http2: Http2,
    /// `X402_SETTLEMENT`, `BASE_RPC_URL`, `SETTLER_PRIVATE_KEY`, `X402_SETTLE_TIMEOUT_S`.
    pub settlement: SettlementConfig,
    /// `CDP_API_KEY_ID` + `CDP_API_KEY_SECRET`: a fresh signed token on every facilitator request.
    pub cdp: Option<CdpCredentials>,
    /// How long one settlement may take (Base confirmation included).
    pub facilitator_timeout: Duration,
    /// `None`: paid coaching calls answer 503 `unavailable` (work we cannot do is not sold).
    pub llm: Option<LlmConfig>,
    pub sms_provider: SmsProviderKind,
    pub twilio: Option<TwilioConfig>,
    pub call_deadline: Duration,
    /// `HEALTH_*`: when a provider's health gate opens, and how it is probed.
    pub health: HealthPolicy,
    /// `WORKER_CONCURRENCY`: jobs of one kind a worker process runs at once (1-100,000).
    pub worker_concurrency: usize,
    /// How often the sweeper looks for due review sends and follow-ups.
    pub sweep_interval: Duration,
    pub otlp_endpoint: Option<String>,
    pub log_format: LogFormat,
    /// `RATE_LIMIT_*`, `CLIENT_IP_HEADER`, `CLIENT_IP_HOPS`.
    pub limits: RateLimits,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{var}: {problem}")]
    Invalid { var: &'static str, problem: String },
    #[error("APP_ENV=production refuses {0}")]
    UnsafeInProduction(&'static str),
}

fn invalid(var: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        var,
        problem: problem.into(),
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads from a map; tests build configurations this way without touching process state.
    pub fn from_map(map: &HashMap<String, String>) -> Result<Self, ConfigError> {
        Self::from_lookup(|k| map.get(k).cloned())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        // Empty values count as unset, as in most .env tooling.
        let var = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };

        let app_env = match var("APP_ENV").as_deref() {
            None | Some("development") => AppEnv::Development,
            Some("production") => AppEnv::Production,
            Some(other) => {
                return Err(invalid(
                    "APP_ENV",
                    format!("expected development or production, got {other:?}"),
                ));
            }
        };
        let bind_addr = bind_addr(var("BIND_ADDR"), var("PORT"))?;
        let public_base_url = var("PUBLIC_BASE_URL")
            .unwrap_or_else(|| "http://localhost:8080".into())
            .trim_end_matches('/')
            .to_owned();
        if !(public_base_url.starts_with("http://") || public_base_url.starts_with("https://")) {
            return Err(invalid(
                "PUBLIC_BASE_URL",
                "must start with http:// or https://",
            ));
        }
        let service_name = var("SERVICE_NAME").unwrap_or_else(|| "grove".into());
        if !service_name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(invalid(
                "SERVICE_NAME",
                "use lowercase letters, digits and '-' (it names a header and a path)",
            ));
        }
        let network = network::read(&var, app_env)?;
        let pay_to = match var("X402_PAY_TO") {
            None => None,
            Some(s) => Some(parse_address(&s).ok_or_else(|| {
                invalid("X402_PAY_TO", "expected a 0x-prefixed 20-byte hex address")
            })?),
        };
        let facilitator_url =
            var("X402_FACILITATOR_URL").map(|u| u.trim_end_matches('/').to_owned());
        if let Some(url) = &facilitator_url {
            check_facilitator_url(url, app_env)?;
        }
        let cdp = cdp::read(&var)?;
        let facilitator_url =
            facilitator_url.or_else(|| cdp.as_ref().map(|_| CDP_FACILITATOR_URL.to_owned()));
        let facilitator_http2 = http2::read(&var, "X402_FACILITATOR_HTTP2")?;
        let settlement = settlement::read(&var)?;
        let llm = llm::read(&var)?;
        let sms_provider = match var("SMS_PROVIDER").as_deref() {
            None | Some("outbox") => SmsProviderKind::Outbox,
            Some("twilio") => SmsProviderKind::Twilio,
            Some(other) => {
                return Err(invalid(
                    "SMS_PROVIDER",
                    format!("expected outbox or twilio, got {other:?}"),
                ));
            }
        };
        let twilio = read_twilio(&var, sms_provider)?;
        let deadline_s: u64 = parse_or("CALL_DEADLINE_S", var("CALL_DEADLINE_S"), "60")?;
        if deadline_s == 0 || deadline_s > 600 {
            return Err(invalid(
                "CALL_DEADLINE_S",
                "must be between 1 and 600 seconds",
            ));
        }
        let queue_namespace = var("QUEUE_NAMESPACE").unwrap_or_else(|| "grove".into());
        if !queue_namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "QUEUE_NAMESPACE",
                "use letters, digits, '-' and '_'",
            ));
        }
        let facilitator_timeout_s: u64 = parse_or(
            "X402_FACILITATOR_TIMEOUT_S",
            var("X402_FACILITATOR_TIMEOUT_S"),
            "30",
        )?;
        if facilitator_timeout_s == 0 || facilitator_timeout_s > 300 {
            return Err(invalid(
                "X402_FACILITATOR_TIMEOUT_S",
                "must be between 1 and 300 seconds",
            ));
        }
        let sweep_s: u64 = parse_or("SWEEP_INTERVAL_S", var("SWEEP_INTERVAL_S"), "30")?;
        if !(1..=59).contains(&sweep_s) {
            return Err(invalid(
                "SWEEP_INTERVAL_S",
                "must be between 1 and 59 seconds",
            ));
        }
        let worker_concurrency: usize = count_between(
            "WORKER_CONCURRENCY",
            var("WORKER_CONCURRENCY"),
            DEFAULT_WORKER_CONCURRENCY,
            MAX_WORKER_CONCURRENCY,
        )?;
        let database_pool: u32 = count_between(
            "DATABASE_POOL_SIZE",
            var("DATABASE_POOL_SIZE"),
            DEFAULT_DATABASE_POOL,
            256,
        )?;
        let write_batch: usize = count_between(
            "DATABASE_WRITE_BATCH",
            var("DATABASE_WRITE_BATCH"),
            DEFAULT_WRITE_BATCH,
            1024,
        )?;
        let sqlite_sync = match var("SQLITE_SYNCHRONOUS").as_deref() {
            None | Some("normal") => SqliteSync::Normal,
            Some("full") => SqliteSync::Full,
            Some(other) => {
                return Err(invalid(
                    "SQLITE_SYNCHRONOUS",
                    format!("expected normal or full, got {other:?}"),
                ));
            }
        };
        let health = health::read(&var)?;
        let log_format = match var("LOG_FORMAT").as_deref() {
            None | Some("pretty") => LogFormat::Pretty,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(invalid(
                    "LOG_FORMAT",
                    format!("expected pretty or json, got {other:?}"),
                ));
            }
        };

        let config = Config {
            app_env,
            bind_addr,
            admin: admin::read(&var)?,
            public_base_url,
            service_name,
            database_url: var("DATABASE_URL").map(Secret::new),
            sqlite_sync,
            database_pool,
            write_batch,
            redis_url: var("REDIS_URL").map(Secret::new),
            queue_namespace,
            network,
            pay_to,
            facilitator_url,
            facilitator_auth: var("X402_FACILITATOR_AUTH").map(Secret::new),
            settlement,
            cdp,
            facilitator_timeout: Duration::from_secs(facilitator_timeout_s),
            facilitator_http2,
            llm,
            sms_provider,
            twilio,
            call_deadline: Duration::from_secs(deadline_s),
            health,
            worker_concurrency,
            sweep_interval: Duration::from_secs(sweep_s),
            otlp_endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            log_format,
            limits: limits::read(&var)?,
        };
        config.refuse_development_defaults_in_production()?;
        Ok(config)
    }

    /// Development defaults are fine on a laptop and dangerous with real money and phones.
    fn refuse_development_defaults_in_production(&self) -> Result<(), ConfigError> {
        if self.app_env != AppEnv::Production {
            return Ok(());
        }
        if self.settles_locally() {
            return Err(ConfigError::UnsafeInProduction(
                "local payment verification without settlement: set X402_FACILITATOR_URL",
            ));
        }
        if self.sms_provider == SmsProviderKind::Outbox {
            return Err(ConfigError::UnsafeInProduction(
                "the SMS outbox (nothing is sent): set SMS_PROVIDER=twilio",
            ));
        }
        self.settlement.refuse_without_a_chain()
    }

    /// The name of the free-sandbox header: `x-{service}-sandbox` (CONTRACT 1).
    pub fn sandbox_header(&self) -> String {
        format!("x-{}-sandbox", self.service_name)
    }

    pub fn skill_path(&self) -> String {
        crate::catalog::paths::skill(&self.service_name)
    }

    pub fn absolute(&self, path: &str) -> String {
        format!("{}{}", self.public_base_url, path)
    }

    /// True when payments are verified locally and never settled (development default).
    pub fn settles_locally(&self) -> bool {
        self.settlement.mode == SettlementMode::Facilitator && self.facilitator_url.is_none()
    }
}

/// `BIND_ADDR` when set; else every interface on `PORT` (what Heroku-style platforms route to);
/// else `0.0.0.0:8080`.
fn bind_addr(bind: Option<String>, port: Option<String>) -> Result<SocketAddr, ConfigError> {
    match (bind, port) {
        (Some(addr), _) => parse_or("BIND_ADDR", Some(addr), ""),
        (None, Some(port)) => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(SocketAddr::from(([0, 0, 0, 0], p))),
            _ => Err(invalid(
                "PORT",
                format!("expected a port from 1 to 65535, got {port:?}"),
            )),
        },
        (None, None) => parse_or("BIND_ADDR", None, "0.0.0.0:8080"),
    }
}

fn parse_or<T: FromStr>(
    name: &'static str,
    value: Option<String>,
    default: &str,
) -> Result<T, ConfigError> {
    let raw = value.unwrap_or_else(|| default.to_owned());
    raw.parse()
        .map_err(|_| invalid(name, format!("could not parse {raw:?}")))
}

/// A count from 1 to `max`, `default` when unset.
fn count_between<T>(
    name: &'static str,
    value: Option<String>,
    default: T,
    max: T,
) -> Result<T, ConfigError>
where
    T: FromStr + PartialOrd + From<u8> + std::fmt::Display,
{
    let n: T = parse_or(name, value, &default.to_string())?;
    if n < T::from(1) || n > max {
        return Err(invalid(name, format!("must be between 1 and {max}")));
    }
    Ok(n)
}

/// Payment payloads (and, with CDP, bearer tokens) travel to the facilitator: in production only
/// over TLS. Plain http stays allowed in development, for a loopback facilitator.
fn check_facilitator_url(url: &str, app_env: AppEnv) -> Result<(), ConfigError> {
    let var = "X402_FACILITATOR_URL";
    let has_scheme = |scheme: &str| {
        url.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    };
    match app_env {
        _ if has_scheme("https://") => Ok(()),
        AppEnv::Production => Err(invalid(var, "must be https:// with APP_ENV=production")),
        AppEnv::Development if has_scheme("http://") => Ok(()),
        AppEnv::Development => Err(invalid(var, "must start with http:// or https://")),
    }
}

fn parse_address(s: &str) -> Option<Address> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if hex.len() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Address::from_str(s).ok()
}

#[cfg(test)]
mod tests;
