//! What each queue consumer is doing, for `/readyz` (the api's, with the embedded worker) and the
//! worker's health endpoint. A consumer that lost Redis is `reconnecting` until its next
//! heartbeat; one that cannot go on is `dead`, and the process is not ready.

use crate::clock;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Registering with its queue for the first time.
    Starting,
    /// Registered and heartbeating: taking jobs.
    Running,
    /// Lost its queue (Redis error); being rebuilt with backoff.
    Reconnecting,
    /// Stopped for good (gave up, or its in-process queue ended).
    Dead,
    /// Stopped on purpose (shutdown).
    Stopped,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConsumerState {
    pub name: String,
    pub state: State,
    /// Since when it has been in this state.
    pub since: DateTime<Utc>,
    /// The last successful registration or heartbeat with its queue.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// How many times it was rebuilt after an error.
    pub restarts: u64,
    pub last_error: Option<String>,
}

/// Every consumer of one process.
#[derive(Debug, Default)]
pub struct Consumers {
    list: Mutex<Vec<ConsumerState>>,
}

impl Consumers {
    /// Adds a consumer, `starting`.
    pub fn register(self: &Arc<Self>, name: &str) -> ConsumerHandle {
        let mut list = self.lock();
        list.push(ConsumerState {
            name: name.to_owned(),
            state: State::Starting,
            since: clock::wall(),
            last_heartbeat: None,
            restarts: 0,
            last_error: None,
        });
        ConsumerHandle {
            all: Arc::clone(self),
            index: list.len() - 1,
        }
    }

    pub fn snapshot(&self) -> Vec<ConsumerState> {
        self.lock().clone()
    }

    /// Ready: every consumer is taking jobs (or was stopped on purpose).
    pub fn ready(&self) -> bool {
        self.lock()
            .iter()
            .all(|c| matches!(c.state, State::Running | State::Stopped))
    }

    /// Every consumer stopped for good (the process is going down with an error).
    pub fn all_dead(&self, error: &str) {
        for c in self.lock().iter_mut() {
            c.last_error = Some(error.to_owned());
            enter(c, State::Dead);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<ConsumerState>> {
        // The state is a few plain fields: a panic elsewhere cannot leave it half-written.
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn enter(c: &mut ConsumerState, state: State) {
    if c.state != state {
        c.state = state;
        c.since = clock::wall();
    }
}

/// One consumer's handle on its entry.
#[derive(Clone, Debug)]
pub struct ConsumerHandle {
    all: Arc<Consumers>,
    index: usize,
}

impl ConsumerHandle {
    fn update(&self, f: impl FnOnce(&mut ConsumerState)) {
        if let Some(c) = self.all.lock().get_mut(self.index) {
            f(c);
        }
    }

    /// Registered or heartbeat with the queue: running.
    pub fn beat(&self) {
        self.update(|c| {
            c.last_heartbeat = Some(clock::wall());
            enter(c, State::Running);
        });
    }

    /// Lost the queue; about to be rebuilt.
    pub fn failed(&self, error: &str) {
        self.update(|c| {
            c.restarts += 1;
            c.last_error = Some(error.to_owned());
            enter(c, State::Reconnecting);
        });
    }

    pub fn dead(&self, error: &str) {
        self.update(|c| {
            c.last_error = Some(error.to_owned());
            enter(c, State::Dead);
        });
    }

    pub fn stopped(&self) {
        self.update(|c| enter(c, State::Stopped));
    }

    /// Running (without waiting for a heartbeat): for in-process consumers, which have none.
    pub fn running(&self) {
        self.update(|c| enter(c, State::Running));
    }

    pub fn state(&self) -> State {
        self.all
            .lock()
            .get(self.index)
            .map(|c| c.state)
            .unwrap_or(State::Dead)
    }

    /// The last heartbeat, if any.
    pub fn last_heartbeat(&self) -> Option<DateTime<Utc>> {
        self.all
            .lock()
            .get(self.index)
            .and_then(|c| c.last_heartbeat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_ready_only_while_every_consumer_runs() {
        let all = Arc::new(Consumers::default());
        let coaching = all.register("coaching");
        let review = all.register("review");
        assert!(!all.ready(), "starting is not ready");
        coaching.beat();
        review.beat();
        assert!(all.ready());
        review.failed("timed out");
        assert!(!all.ready());
        assert_eq!(all.snapshot()[1].restarts, 1);
        review.beat();
        assert!(all.ready());
        coaching.dead("gave up");
        assert!(!all.ready());
        assert_eq!(coaching.state(), State::Dead);
    }
}
