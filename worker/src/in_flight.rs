//! Jobs that are running, counted so that shutdown can wait for the ones that outlived their
//! consumer (a consumer rebuilt after a Redis error leaves its jobs running on their own tasks),
//! and the runs that hold a call's lease in this process, which move to its new liveness key
//! when it takes its lock again after a database outage (`runtime::database`).

use std::{
    collections::HashSet,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering::SeqCst},
    },
    time::Duration,
};
use uuid::Uuid;

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static RUNS: Mutex<Option<HashSet<Uuid>>> = Mutex::new(None);

/// A run holding its call's lease in this process, listed until dropped.
#[derive(Debug)]
pub struct LiveRun(Uuid);

impl LiveRun {
    pub fn enter(run: Uuid) -> Self {
        RUNS.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_default()
            .insert(run);
        Self(run)
    }

    /// Every run alive in this process now.
    pub fn all() -> Vec<Uuid> {
        RUNS.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .flatten()
            .copied()
            .collect()
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if let Some(runs) = RUNS.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            runs.remove(&self.0);
        }
    }
}

/// Held by a running job; counts it until dropped.
#[derive(Debug)]
pub struct InFlight(());

impl InFlight {
    pub fn enter() -> Self {
        RUNNING.fetch_add(1, SeqCst);
        Self(())
    }

    /// Jobs running in this process.
    pub fn count() -> usize {
        RUNNING.load(SeqCst)
    }

    /// Waits until no job runs, or `limit` passes.
    pub async fn drain(limit: Duration) {
        let give_up = tokio::time::Instant::now() + limit;
        while Self::count() > 0 && tokio::time::Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if Self::count() > 0 {
            tracing::warn!(
                running = Self::count(),
                "stopping with jobs still running; they run again elsewhere"
            );
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, SeqCst);
    }
}
