//! What each Redis queue holds, read in one script per queue: the scaling signals (issue 27).
//!
//! apalis-redis keeps every pushed job in the queue's scheduled set (a sorted set by run time),
//! a ready one with a score that is already past, until a worker's fetch moves what is due to
//! the active list and takes a batch from it into that worker's in-flight set. So "ready" is the
//! active list plus the due part of the scheduled set (with no worker running, all of it waits
//! in the set, which a list-length scaler would read as an empty queue), "scheduled" is the
//! rest of the set (delayed follow-ups: not work for anyone yet), and "held" is what workers
//! took and have not finished.

use super::{JobQueue, QueueError, lane_config};
use serde::Serialize;

/// One queue at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueStats {
    pub queue: &'static str,
    /// Jobs that could run now and wait for a worker.
    pub ready: u64,
    /// Jobs waiting for their time (delayed follow-ups): nobody can run them yet.
    pub scheduled: u64,
    /// Jobs a worker took and has not finished (running, or fetched and about to run).
    pub held: u64,
}

impl QueueStats {
    /// The work this queue asks of its workers now: what waits plus what they hold. Divided
    /// by one worker's concurrency it is the number of workers that runs all of it at once
    /// (the autoscaler's target, `deploy/kubernetes`); it stays up while the workers are busy,
    /// so a steady load does not scale them in and out.
    pub fn backlog(&self) -> u64 {
        self.ready + self.held
    }
}

/// KEYS: active list, scheduled set, workers set, in-flight prefix; ARGV: now (seconds, the
/// scheduled set's unit).
const COUNT: &str = r"
local now = tonumber(ARGV[1])
local ready = redis.call('llen', KEYS[1]) + redis.call('zcount', KEYS[2], '-inf', now)
local scheduled = redis.call('zcount', KEYS[2], '(' .. now, '+inf')
local held = 0
for _, worker in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
  held = held + redis.call('scard', KEYS[4] .. ':' .. worker)
end
return {ready, scheduled, held}
";

impl JobQueue {
    /// Each queue's counts; None in memory mode (the embedded worker is never scaled).
    pub async fn stats(&self) -> Result<Option<Vec<QueueStats>>, QueueError> {
        let (Some(conn), Some(coaching), Some(review)) = (
            &self.conn,
            lane_config(&self.coaching),
            lane_config(&self.review),
        ) else {
            return Ok(None);
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let script = redis::Script::new(COUNT);
        let mut out = Vec::new();
        for (queue, cfg) in [("coaching", coaching), ("review", review)] {
            let (ready, scheduled, held): (u64, u64, u64) = script
                .key(cfg.active_jobs_list())
                .key(cfg.scheduled_jobs_set())
                .key(cfg.workers_set())
                .key(cfg.inflight_jobs_set())
                .arg(now)
                .invoke_async(&mut conn.clone())
                .await?;
            out.push(QueueStats {
                queue,
                ready,
                scheduled,
                held,
            });
        }
        Ok(Some(out))
    }
}
