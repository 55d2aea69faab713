//! The coaching work in hand and how fast it finishes (issue 31): what admission before payment
//! reads to decide whether a new call could finish within `CALL_DEADLINE_S`.
//!
//! A worker's `Meter` counts the coaching jobs it holds (running, or waiting for a slot in the
//! embedded mode's in-process queue), its capacity (jobs it runs at once) and the runs it finished
//! over the last `WINDOW` with their service times. The embedded api reads the meter beside it;
//! in the distributed mode each worker reports its meter to Redis every second (`queue::load`),
//! where the api reads the sum with the queue's depth.
//!
//! `estimate` holds the arithmetic.

mod estimate;
pub use estimate::{Verdict, admit};

use std::time::Instant;
use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed},
    },
    time::Duration,
};

/// How far back completions are counted: long enough to hold several runs of a slow model
/// (5-60 s), short enough to follow a provider that slows down.
pub const WINDOW: Duration = Duration::from_secs(60);
const BUCKETS: usize = 60;

/// What the workers hold and how fast they finish, summed over workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Coaching jobs pushed and not finished: running, or waiting for a slot.
    pub backlog: u64,
    /// Coaching jobs the workers run at once.
    pub capacity: u64,
    /// Runs finished within the window, and their service times summed (milliseconds).
    pub served: u64,
    pub service_ms: u64,
}

impl Load {
    /// The mean time one run takes (start to stored result, waits on the provider's limits
    /// included); None before any run finished within the window.
    pub fn service_time(&self) -> Option<Duration> {
        (self.served > 0).then(|| Duration::from_millis(self.service_ms / self.served))
    }

    /// Completions per second over the window.
    pub fn completions_per_s(&self) -> f64 {
        self.served as f64 / WINDOW.as_secs_f64()
    }

    pub fn add(&mut self, other: &Load) {
        self.backlog += other.backlog;
        self.capacity += other.capacity;
        self.served += other.served;
        self.service_ms += other.service_ms;
    }
}

#[derive(Clone, Copy, Default)]
struct Bucket {
    /// Seconds since the meter started; a bucket of another second is stale.
    second: u64,
    served: u64,
    service_ms: u64,
}

/// One worker's (or the embedded process's) coaching load.
pub struct Meter {
    started: Instant,
    capacity: AtomicUsize,
    /// Pushed into the in-process queue and not yet taken by a slot (the embedded mode; in the
    /// distributed mode Redis holds the queue and says how deep it is).
    queued: AtomicU64,
    running: AtomicU64,
    window: Mutex<[Bucket; BUCKETS]>,
}

impl Default for Meter {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            capacity: AtomicUsize::new(0),
            queued: AtomicU64::new(0),
            running: AtomicU64::new(0),
            window: Mutex::new([Bucket::default(); BUCKETS]),
        }
    }
}

/// A coaching job holding one of the worker's slots, counted until dropped.
pub struct Slot(Arc<Meter>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Relaxed);
    }
}

impl Meter {
    /// Coaching jobs this process runs at once (its consumer's concurrency, or less when the
    /// model provider's own cap is lower).
    pub fn set_capacity(&self, jobs: usize) {
        self.capacity.store(jobs, Relaxed);
    }

    /// A job pushed into the in-process queue.
    pub fn queued(&self) {
        self.queued.fetch_add(1, Relaxed);
    }

    /// A job taken by a slot: no longer queued (if it was counted there), running until the
    /// slot drops.
    pub fn enter(self: &Arc<Self>) -> Slot {
        let _ = self
            .queued
            .fetch_update(Relaxed, Relaxed, |q| Some(q.saturating_sub(1)));
        self.running.fetch_add(1, Relaxed);
        Slot(Arc::clone(self))
    }

    /// A run that did its work (a model answer or a failure), and how long it took.
    pub fn served(&self, took: Duration) {
        self.served_at(self.started.elapsed().as_secs(), took);
    }

    fn served_at(&self, second: u64, took: Duration) {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let b = &mut window[(second % BUCKETS as u64) as usize];
        if b.second != second {
            *b = Bucket {
                second,
                ..Bucket::default()
            };
        }
        b.served += 1;
        b.service_ms += u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    }

    /// This meter now.
    pub fn load(&self) -> Load {
        self.load_at(self.started.elapsed().as_secs())
    }

    fn load_at(&self, now: u64) -> Load {
        let window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let (served, service_ms) = window
            .iter()
            .filter(|b| b.served > 0 && now.saturating_sub(b.second) < BUCKETS as u64)
            .fold((0, 0), |(n, ms), b| (n + b.served, ms + b.service_ms));
        Load {
            backlog: self.queued.load(Relaxed) + self.running.load(Relaxed),
            capacity: self.capacity.load(Relaxed) as u64,
            served,
            service_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_counts_what_it_holds_and_forgets_runs_older_than_the_window() {
        let meter = Arc::new(Meter::default());
        meter.set_capacity(4);
        meter.queued();
        meter.queued();
        let slot = meter.enter();
        assert_eq!(meter.load().backlog, 2, "one queued, one running");
        meter.served_at(10, Duration::from_secs(2));
        meter.served_at(12, Duration::from_secs(4));
        drop(slot);
        let load = meter.load_at(13);
        assert_eq!((load.backlog, load.capacity, load.served), (1, 4, 2));
        assert_eq!(load.service_time(), Some(Duration::from_secs(3)));
        assert_eq!(
            meter.load_at(70).served,
            1,
            "the run at 10 s left the window"
        );
        assert_eq!(meter.load_at(72).service_time(), None);
        // A slot taken by a job that was never queued here (Redis) does not go below zero.
        let _a = meter.enter();
        let _b = meter.enter();
        assert_eq!(meter.load().backlog, 2);
    }
}
