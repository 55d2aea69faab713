//! Health gates of the outside providers (issue 30): a circuit breaker per provider (the model,
//! per configured model; Twilio) that keeps Grove from taking money for work that cannot run.
//!
//! - **Fed by real outcomes.** The worker reports each model call and each text it sends
//!   ([`Gates::record`]): connection errors, timeouts, 5xx, 429 beyond the retry budget and the
//!   like are failures; answers a caller's own request caused (a refusal, a wrong number) are
//!   not reported at all. A process counts its outcomes over `HEALTH_WINDOW_S`; when at least
//!   `HEALTH_FAILURES` failed and no fewer than succeeded, it opens the gate.
//! - **Shared.** The gate's state is a row per provider (`provider_gates`, written only by
//!   `store`), which every process reads every half second: an api answers from what its
//!   workers saw, whichever process saw it.
//! - **Probed.** `HEALTH_PROBE_S` after it opened, one process takes the probe (a lease on the
//!   row: half-open) and runs the provider's cheap real request ([`Probe`]): passed, the gate
//!   closes; failed, the next probe waits twice as long, up to `HEALTH_PROBE_MAX_S`.
//! - **Consulted.** Before any price: while a product's gate does not admit, the api answers
//!   `503` (`model_unavailable`, `sms_unavailable`) with `Retry-After` until the next probe
//!   ([`Gates::refusal`]). The worker fails a coaching call fast while the model's gate is open,
//!   and the api re-runs paid calls that failed in an outage once it closes. A send path asks
//!   [`Gates::admits`] (or [`Gates::view`]) before it texts.
//!
//! `docs/provider-health.md` argues the numbers and the probes.

mod gates;
pub mod reasons;
pub mod store;
mod window;

pub use gates::{Gates, Outage, PROBE_TIMEOUT, REFRESH};

use crate::config::{Config, SmsProviderKind};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::Serialize;
use std::time::Duration;

/// Which outside provider a gate guards: `model:<LLM_MODEL>` or `sms:twilio`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderId(String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    Model,
    Sms,
}

impl ProviderId {
    /// The gate of one model (one per configured model).
    pub fn model(model: &str) -> Self {
        Self(format!("model:{model}"))
    }

    pub fn twilio() -> Self {
        Self("sms:twilio".into())
    }

    /// The gate of the configured model, if coaching calls are on sale at all.
    pub fn of_model(config: &Config) -> Option<Self> {
        config.llm.as_ref().map(|llm| Self::model(&llm.model))
    }

    /// The gate of the configured SMS provider; none for the outbox (it sends nothing).
    pub fn of_sms(config: &Config) -> Option<Self> {
        (config.sms_provider == SmsProviderKind::Twilio).then(Self::twilio)
    }

    /// Every gate a process with this configuration keeps.
    pub fn configured(config: &Config) -> Vec<Self> {
        Self::of_model(config)
            .into_iter()
            .chain(Self::of_sms(config))
            .collect()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn kind(&self) -> ProviderKind {
        if self.0.starts_with("sms:") {
            ProviderKind::Sms
        } else {
            ProviderKind::Model
        }
    }
}

impl std::fmt::Display for ProviderId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One real call's outcome, as far as the provider's health goes. Outcomes that say nothing
/// about it (a refusal, a number that cannot receive texts) are not recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    /// Why, in the provider's words (never the request's content).
    Failed(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateState {
    /// Calls are sold.
    Closed,
    /// Not sold until a probe passes.
    Open,
    /// Open, and a process is probing right now.
    HalfOpen,
}

impl GateState {
    pub fn as_str(self) -> &'static str {
        match self {
            GateState::Closed => "closed",
            GateState::Open => "open",
            GateState::HalfOpen => "half_open",
        }
    }
}

/// A gate as a process last read it (`/readyz` shows these).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateView {
    pub provider: String,
    pub state: GateState,
    /// When it last opened, and last closed.
    pub opened_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// While open: when the next probe is due.
    pub retry_at: Option<DateTime<Utc>>,
    pub probes_failed: i32,
    /// Why it opened, or why the last probe failed.
    pub reason: Option<String>,
}

impl GateView {
    /// Calls needing this provider may be sold (or sent).
    pub fn admits(&self) -> bool {
        self.state == GateState::Closed
    }

    /// How long a refused client should wait: until the next probe, at least a second.
    pub fn retry_after(&self, now: DateTime<Utc>) -> Duration {
        let left = self
            .retry_at
            .and_then(|at| (at - now).to_std().ok())
            .unwrap_or_default();
        let whole = left.as_secs() + u64::from(left.subsec_nanos() > 0);
        Duration::from_secs(whole.max(1))
    }
}

/// A provider's cheap real request, run by one process while its gate is open: `Ok` means it
/// answered as a working provider would, `Err` says why not.
pub trait Probe: Send + Sync {
    fn probe(&self) -> BoxFuture<'_, Result<(), String>>;
}
