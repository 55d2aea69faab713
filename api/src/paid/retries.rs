//! The calls whose job push is being retried in this process (`push`), for `/metrics` and so
//! that one call gets one retry task.

use std::{
    collections::HashSet,
    sync::{Mutex, MutexGuard, PoisonError},
};
use tokio::sync::watch;
use uuid::Uuid;

/// One retry task per call, and the signal that stops them at shutdown.
pub struct Retries {
    calls: Mutex<HashSet<Uuid>>,
    pub(super) stopped: watch::Receiver<bool>,
}

impl Retries {
    pub fn new(stopped: watch::Receiver<bool>) -> Self {
        Self {
            calls: Mutex::default(),
            stopped,
        }
    }

    /// Marks `call_id` as retried here; false if it already was.
    pub(super) fn begin(&self, call_id: Uuid) -> bool {
        self.lock().insert(call_id)
    }

    pub(super) fn end(&self, call_id: Uuid) {
        self.lock().remove(&call_id);
    }

    /// How many pushes are being retried (for `/metrics`).
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<Uuid>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
