//! The handle every process keeps on the gates: its last reading of the shared rows (refreshed
//! every half second), its own windows of recent outcomes, and the probes it may run.

use super::{
    GateState, GateView, Outcome, Probe, ProviderId,
    store::{self, state},
    window::Window,
};
use crate::{config::HealthPolicy, db::entities::provider_gate};
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock, Weak},
    time::{Duration, Instant},
};
use uuid::Uuid;

/// How often a process reads the shared rows, and looks for a due probe.
pub const REFRESH: Duration = Duration::from_millis(500);
/// How long a probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The last outage of a gate that is closed again: what the api's re-run of failed paid calls
/// looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    pub opened_at: DateTime<Utc>,
    pub closed_at: DateTime<Utc>,
}

struct Inner {
    db: DatabaseConnection,
    policy: HealthPolicy,
    /// This process, as a prober.
    me: Uuid,
    started: Instant,
    rows: RwLock<HashMap<String, provider_gate::Model>>,
    windows: Mutex<HashMap<String, Window>>,
}

/// Cheap to clone; background tasks stop once every clone is dropped.
#[derive(Clone)]
pub struct Gates(Arc<Inner>);

impl Gates {
    /// Adds a closed row for each provider that has none, reads them all, and keeps reading
    /// them every [`REFRESH`] until the last clone is dropped.
    pub async fn start(
        db: DatabaseConnection,
        policy: HealthPolicy,
        providers: &[ProviderId],
    ) -> Result<Self, DbErr> {
        let names: Vec<&str> = providers.iter().map(ProviderId::as_str).collect();
        store::ensure(&db, &names, crate::clock::wall()).await?;
        let gates = Gates(Arc::new(Inner {
            db,
            policy,
            me: Uuid::new_v4(),
            started: Instant::now(),
            rows: RwLock::default(),
            windows: Mutex::default(),
        }));
        gates.refresh().await?;
        let weak = Arc::downgrade(&gates.0);
        tokio::spawn(async move {
            // Said once when the database stops answering, and once when it answers again: the
            // gates stay as last read meanwhile.
            let mut failing = false;
            while let Some(gates) = upgrade(&weak) {
                match gates.refresh().await {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("reading the providers' health gates again");
                    }
                    Ok(()) => {}
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "could not read the providers' health gates; keeping them as last read");
                    }
                    Err(_) => {}
                }
                drop(gates);
                tokio::time::sleep(REFRESH).await;
            }
        });
        Ok(gates)
    }

    pub fn policy(&self) -> &HealthPolicy {
        &self.0.policy
    }

    /// The gate as last read; None for a provider this deployment has no gate for.
    pub fn view(&self, provider: &ProviderId) -> Option<GateView> {
        self.rows().get(provider.as_str()).map(view)
    }

    /// Every gate, by provider.
    pub fn all(&self) -> Vec<GateView> {
        let mut all: Vec<GateView> = self.rows().values().map(view).collect();
        all.sort_by(|a, b| a.provider.cmp(&b.provider));
        all
    }

    /// Work needing `provider` may be sold or sent (true for a provider without a gate). Asked
    /// before every model call: one read lock, nothing copied.
    pub fn admits(&self, provider: &ProviderId) -> bool {
        self.rows()
            .get(provider.as_str())
            .is_none_or(|row| row.state == state::CLOSED)
    }

    /// While `provider`'s gate does not admit: how long a refused client should wait.
    pub fn refusal(&self, provider: &ProviderId) -> Option<Duration> {
        let v = self.view(provider)?;
        (!v.admits()).then(|| v.retry_after(crate::clock::wall()))
    }

    /// The last outage of a gate that is closed now.
    pub fn last_outage(&self, provider: &ProviderId) -> Option<Outage> {
        let rows = self.rows();
        let row = rows.get(provider.as_str())?;
        match (row.state.as_str(), row.opened_at, row.closed_at) {
            (state::CLOSED, Some(opened_at), Some(closed_at)) if closed_at >= opened_at => {
                Some(Outage {
                    opened_at,
                    closed_at,
                })
            }
            _ => None,
        }
    }

    /// Counts one real call's outcome. While the gate is open nothing is counted (calls still
    /// in flight when it opened say nothing new); a failure that trips this process's window
    /// opens the gate for every process.
    pub async fn record(&self, provider: &ProviderId, outcome: Outcome) {
        if !self.admits(provider) {
            return;
        }
        let failed = matches!(outcome, Outcome::Failed(_));
        let second = self.0.started.elapsed().as_secs();
        let tripped = {
            let mut windows = lock(&self.0.windows);
            let policy = &self.0.policy;
            match windows.get_mut(provider.as_str()) {
                Some(window) => window.record(second, failed),
                None => {
                    let mut window = Window::new(policy.window.as_secs(), policy.failures);
                    let tripped = window.record(second, failed);
                    windows.insert(provider.as_str().to_owned(), window);
                    tripped
                }
            }
        };
        if !tripped {
            return;
        }
        let Outcome::Failed(why) = outcome else {
            return;
        };
        let policy = &self.0.policy;
        let reason = format!(
            "{} or more calls failed within {} s; the last: {why}",
            policy.failures,
            policy.window.as_secs()
        );
        let now = crate::clock::wall();
        let first_probe = now + chrono_duration(policy.probe_after);
        match store::open(&self.0.db, provider.as_str(), &reason, now, first_probe).await {
            Ok(opened) => {
                if opened {
                    tracing::error!(%provider, %reason, "provider health gate opened: its paid work is not sold until a probe passes");
                }
                self.refresh_logged().await;
            }
            Err(e) => {
                tracing::warn!(%provider, error = %e, "could not open the provider's health gate; a later failure tries again");
                if let Some(w) = lock(&self.0.windows).get_mut(provider.as_str()) {
                    w.untrip();
                }
            }
        }
    }

    /// Probes `provider` whenever its gate is open and a probe is due, in this process, for as
    /// long as any clone of these gates lives.
    pub fn watch(&self, provider: ProviderId, probe: Arc<dyn Probe>) {
        let weak = Arc::downgrade(&self.0);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(REFRESH).await;
                let Some(gates) = upgrade(&weak) else { return };
                if let Err(e) = gates.probe_if_due(&provider, probe.as_ref()).await {
                    tracing::warn!(%provider, error = %e, "could not probe the provider's health gate");
                }
            }
        });
    }

    /// Runs one probe if the gate is open, the probe is due and this process wins it.
    pub async fn probe_if_due(
        &self,
        provider: &ProviderId,
        probe: &dyn Probe,
    ) -> Result<(), DbErr> {
        let now = crate::clock::wall();
        let due = self
            .view(provider)
            .is_some_and(|v| v.state != GateState::Closed && v.retry_at.is_none_or(|at| at <= now));
        if !due {
            return Ok(());
        }
        let db = &self.0.db;
        let lease = now + chrono_duration(PROBE_TIMEOUT + Duration::from_secs(5));
        if !store::take_probe(db, provider.as_str(), self.0.me, now, lease).await? {
            return Ok(());
        }
        let outcome = match tokio::time::timeout(PROBE_TIMEOUT, probe.probe()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the probe took longer than {} s",
                PROBE_TIMEOUT.as_secs()
            )),
        };
        let now = crate::clock::wall();
        match outcome {
            Ok(()) => {
                if store::probe_passed(db, provider.as_str(), self.0.me, now).await? {
                    tracing::warn!(%provider, "provider health gate closed: its probe passed; paid work is sold again");
                }
            }
            Err(why) => {
                let failed = self.view(provider).map_or(0, |v| v.probes_failed);
                let next = now + chrono_duration(self.backoff(failed + 1));
                store::probe_failed(db, provider.as_str(), self.0.me, now, next, &why).await?;
                tracing::warn!(%provider, reason = %why, next_probe = %next, "provider health probe failed; the gate stays open");
            }
        }
        self.refresh().await
    }

    /// The pause before the next probe after `failed` failed probes.
    fn backoff(&self, failed: i32) -> Duration {
        let p = &self.0.policy;
        let doublings = u32::try_from(failed.clamp(0, 16)).unwrap_or(0);
        p.probe_after
            .saturating_mul(1 << doublings)
            .min(p.probe_max)
    }

    /// Reads every row again; a process whose reading shows a gate changed (opened, closed)
    /// starts that provider's window afresh.
    pub async fn refresh(&self) -> Result<(), DbErr> {
        let fresh = store::load_all(&self.0.db).await?;
        let mut rows = self.0.rows.write().unwrap_or_else(PoisonError::into_inner);
        let mut windows = lock(&self.0.windows);
        for row in fresh {
            let changed = rows
                .get(&row.provider)
                .is_none_or(|old| old.state != row.state || old.opens != row.opens);
            if changed {
                windows.remove(&row.provider);
            }
            rows.insert(row.provider.clone(), row);
        }
        Ok(())
    }

    async fn refresh_logged(&self) {
        if let Err(e) = self.refresh().await {
            tracing::warn!(error = %e, "could not read the providers' health gates");
        }
    }

    fn rows(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, provider_gate::Model>> {
        self.0.rows.read().unwrap_or_else(PoisonError::into_inner)
    }
}

fn upgrade(weak: &Weak<Inner>) -> Option<Gates> {
    weak.upgrade().map(Gates)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn view(row: &provider_gate::Model) -> GateView {
    let now = crate::clock::wall();
    let state = match row.state.as_str() {
        state::CLOSED => GateState::Closed,
        _ if row.probe_until.is_some_and(|until| until > now) => GateState::HalfOpen,
        _ => GateState::Open,
    };
    GateView {
        provider: row.provider.clone(),
        state,
        opened_at: row.opened_at,
        closed_at: row.closed_at,
        retry_at: row.retry_at.filter(|_| state != GateState::Closed),
        probes_failed: row.probes_failed,
        reason: row.reason.clone(),
    }
}
