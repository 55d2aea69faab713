//! Admission before payment (issue 31): a coaching call is priced only if it could finish within
//! `CALL_DEADLINE_S` at the workers' measured pace (`grove_common::load::admit`). Past that, an
//! unpaid request (HTTP or MCP, or one whose payment was refused) gets `503 over_capacity` with
//! `Retry-After` instead of a 402, so nobody pays for a call that would time out in the queue.
//! As with the health gate, a request whose payment verifies is never refused here: the repeat of
//! a paid call and the payment that answers a price quoted earlier always go on.
//!
//! What counts as ahead of a new call: the coaching jobs the workers hold or that wait for them
//! (the embedded worker's meter; in the distributed mode the coaching queue's depth in Redis,
//! read every second, plus the jobs this process pushed since), the paid calls this process is
//! settling, and the prices it quoted within `QUOTE_HOLD` that were not paid yet: a flood of
//! clients all get their 402 before any of them pays, and each quote stands for a call that may
//! follow within moments. Quotes and settlements are this process's own: with several api
//! replicas, each counts its own, and the queue's depth is what they share.

use grove_common::{
    load::{self, Load, Meter, Verdict},
    queue::{JobQueue, LOAD_REPORT_EVERY},
};
use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};
use tokio::{sync::watch, time::Instant};

/// How long a quoted price counts as a call about to arrive: an agent with a wallet signs and
/// retries within moments; one that takes longer finds its room by the queue's own measure.
pub const QUOTE_HOLD: Duration = Duration::from_secs(10);

pub struct Admission {
    deadline: Duration,
    /// The embedded worker's meter (None in the distributed mode).
    meter: Option<Arc<Meter>>,
    /// The distributed mode's last read of Redis, and this process's pushes since.
    shared: Mutex<Shared>,
    quotes: Mutex<VecDeque<Instant>>,
    settling: AtomicU64,
}

#[derive(Default)]
struct Shared {
    load: Option<Load>,
    pushed_since: u64,
}

/// A paid coaching call between its claim and its push, counted as ahead of new calls.
pub struct Settling<'a>(&'a Admission);

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        self.0.settling.fetch_sub(1, Relaxed);
        if self.0.meter.is_none() {
            self.0.shared().pushed_since += 1;
        }
    }
}

impl Admission {
    pub fn new(deadline: Duration, queue: &JobQueue) -> Self {
        Self {
            deadline,
            meter: queue.in_process().then(|| Arc::clone(queue.meter())),
            shared: Mutex::default(),
            quotes: Mutex::default(),
            settling: AtomicU64::new(0),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The workers' load and the calls ahead of a new one (for `/metrics`).
    pub fn gauges(&self) -> (Load, u64) {
        self.now()
    }

    /// The workers' load and the calls ahead of a new one.
    fn now(&self) -> (Load, u64) {
        let quotes = {
            let mut q = self.quotes.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            while q
                .front()
                .is_some_and(|at| now.duration_since(*at) >= QUOTE_HOLD)
            {
                q.pop_front();
            }
            q.len() as u64
        };
        let (load, pushed) = match &self.meter {
            Some(meter) => (meter.load(), 0),
            None => {
                let s = self.shared();
                (s.load.unwrap_or_default(), s.pushed_since)
            }
        };
        let ahead = load.backlog + pushed + self.settling.load(Relaxed) + quotes;
        (load, ahead)
    }

    /// Whether one more call would finish in time; an admitted one is counted as a quote.
    pub(super) fn quote(&self) -> Result<(), Duration> {
        let (load, ahead) = self.now();
        match load::admit(&load, ahead, self.deadline) {
            Verdict::Admit => {
                let mut q = self.quotes.lock().unwrap_or_else(PoisonError::into_inner);
                q.push_back(Instant::now());
                Ok(())
            }
            Verdict::Refuse { retry_after } => Err(retry_after),
        }
    }

    /// A paid coaching call claimed: it takes the place of the oldest quote, and counts as ahead
    /// of new calls until the guard drops (once its job is pushed).
    pub fn paid(&self) -> Settling<'_> {
        self.quotes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        self.settling.fetch_add(1, Relaxed);
        Settling(self)
    }

    /// In the distributed mode, reads the workers' load from Redis every `LOAD_REPORT_EVERY`
    /// until `stopped`; a failed read keeps the last one (the queue's own readiness reports
    /// Redis being away).
    pub async fn follow(&self, queue: &JobQueue, mut stopped: watch::Receiver<bool>) {
        if self.meter.is_some() {
            return;
        }
        let mut tick = tokio::time::interval(LOAD_REPORT_EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
            match queue.shared_load().await {
                Ok(load) => {
                    let mut s = self.shared();
                    s.load = load;
                    s.pushed_since = 0;
                }
                Err(e) => tracing::debug!(error = %e, "could not read the workers' load"),
            }
        }
    }
}
