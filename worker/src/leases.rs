//! The leases of the runs working in this process, renewed together. One renewer task (per
//! `Deps`, started by the first run) renews every held lease each `LEASE_RENEW_EVERY` with one
//! statement per thousand runs (`calls::renew_leases`), and tells each run that no longer holds
//! its call (another run took it over after this one stalled, or the call ended) so that it
//! stops. A run used to renew on its own timer: at 10,000 calls in flight that was 2,000 writes
//! a second, each waiting with its query's future in memory (issue 31).
//!
//! A renewal that fails (the database is unreachable) is the third outcome: nothing is known
//! about the leases, so no run is told it lost; the runs go on and the next tick tries again,
//! as the lease (30 s) outlasts several ticks. A run whose process died is taken over through
//! the liveness lock, not through its lease.

use grove_common::db::calls::{self, LEASE_RENEW_EVERY};
use sea_orm::DatabaseConnection;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock, PoisonError, Weak},
};
use tokio::sync::Notify;
use uuid::Uuid;

/// The runs holding a lease in this process, each with the signal that tells it it lost.
#[derive(Debug, Default)]
pub struct Leases {
    held: Mutex<HashMap<Uuid, Arc<Notify>>>,
    renewer: OnceLock<()>,
}

/// A run's hold on its call's lease, renewed until dropped.
#[derive(Debug)]
pub struct Held {
    leases: Arc<Leases>,
    run: Uuid,
    lost: Arc<Notify>,
}

impl Held {
    /// Resolves when a renewal found that the run no longer holds its call.
    pub async fn lost(&self) {
        self.lost.notified().await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.leases.held().remove(&self.run);
    }
}

impl Leases {
    /// Renews `run`'s lease (its call is already running under it) until the answer is dropped.
    /// The first hold starts the renewer on the current runtime.
    pub fn hold(self: &Arc<Self>, db: &DatabaseConnection, run: Uuid) -> Held {
        self.renewer.get_or_init(|| {
            tokio::spawn(renew(Arc::downgrade(self), db.clone()));
        });
        let lost = Arc::new(Notify::new());
        self.held().insert(run, Arc::clone(&lost));
        Held {
            leases: Arc::clone(self),
            run,
            lost,
        }
    }

    /// Runs holding a lease now.
    pub fn count(&self) -> usize {
        self.held().len()
    }

    /// The runs holding a lease now: a run holds it from its start until its outcome is
    /// stored, so these are the runs that move to this process's new liveness key after a
    /// database outage (`runtime::database`).
    pub fn runs(&self) -> Vec<Uuid> {
        self.held().keys().copied().collect()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Notify>>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One renewal of every held lease; the runs told they lost.
    pub async fn renew_once(&self, db: &DatabaseConnection) -> Result<usize, sea_orm::DbErr> {
        let runs: Vec<Uuid> = self.held().keys().copied().collect();
        if runs.is_empty() {
            return Ok(0);
        }
        let renewed = calls::renew_leases(db, &runs).await?;
        let held = self.held();
        // A run that ended while the statement ran is no longer listed: nobody to tell.
        let lost: Vec<&Arc<Notify>> = runs
            .iter()
            .filter(|run| !renewed.contains(run))
            .filter_map(|run| held.get(run))
            .collect();
        for signal in &lost {
            signal.notify_one();
        }
        Ok(lost.len())
    }
}

/// The renewer: every `LEASE_RENEW_EVERY` until the registry is gone. A run's lease is fresh
/// when it starts (`LEASE` long), so the first renewal waits a whole period.
async fn renew(leases: Weak<Leases>, db: DatabaseConnection) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + LEASE_RENEW_EVERY,
        LEASE_RENEW_EVERY,
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(leases) = leases.upgrade() else {
            return;
        };
        match leases.renew_once(&db).await {
            Ok(0) => {}
            Ok(lost) => tracing::warn!(lost, "runs lost their call's lease; they stop"),
            Err(e) => tracing::warn!(
                runs = leases.count(),
                error = %e,
                "could not renew this process's leases; trying again next period"
            ),
        }
    }
}
