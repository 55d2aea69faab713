//! Jobs that are running, counted so that shutdown can wait for the ones that outlived their
//! consumer (a consumer rebuilt after a Redis error leaves its jobs running on their own tasks).
//! The runs holding a call's lease are listed apart, with their lease (`crate::leases`).

use std::{
    sync::atomic::{AtomicUsize, Ordering::SeqCst},
    time::Duration,
};

static RUNNING: AtomicUsize = AtomicUsize::new(0);

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
