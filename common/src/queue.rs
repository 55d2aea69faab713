//! The pushing side of the job queues (coaching and review), with two backends behind one type:
//! Redis (api and any number of `worker` processes share it) and in-process memory (the
//! embedded single-process mode, no server needed).

use crate::{
    consumers::{Consumers, State as ConsumerState},
    jobs::{self, CoachingJob, Job, ReviewJob},
    load::Meter,
};
use apalis::prelude::{MemoryStorage, Task, TaskBuilder, TaskId, TaskSink};
use apalis_core::backend::memory::{MemorySink, MemoryStorageError};
use apalis_redis::RedisStorage;
use futures::{SinkExt, StreamExt, channel::mpsc::UnboundedSender, lock::Mutex};
use redis::aio::ConnectionManager;
use serde::{Serialize, de::DeserializeOwned};
use std::{sync::Arc, time::Duration};
use waking::Waking;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("could not enqueue: {0}")]
    Push(String),
    /// An in-process consumer stopped: its queue fills and nothing runs (restart the process).
    #[error("in-process consumer not running: {0}")]
    Consumer(String),
}

/// One job type's queue.
pub enum Lane<T> {
    Redis {
        /// Pushes a job to run later (no wake-up: the workers' poll finds it when it is due).
        storage: Box<RedisStorage<T>>,
        /// Pushes a job to run now, with the workers' wake-up in the same round trip.
        now: Box<RedisStorage<T, Waking>>,
    },
    /// Our own sender into the worker's channel. apalis-core 1.0's `MemorySink` is not safe to
    /// push through while its worker runs: the worker's readiness check takes the same lock, so
    /// a push can panic (`start_send` does `try_lock().unwrap()`), and a contended lock drops
    /// its waker, so both sides can sleep for good. The unbounded channel needs no lock.
    Memory(UnboundedSender<Task<T>>),
}

impl<T> Clone for Lane<T> {
    fn clone(&self) -> Self {
        match self {
            Lane::Redis { storage, now } => Lane::Redis {
                storage: storage.clone(),
                now: now.clone(),
            },
            Lane::Memory(tx) => Lane::Memory(tx.clone()),
        }
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync + Unpin + 'static> Lane<T> {
    fn redis(conn: &ConnectionManager, queue: String) -> Self {
        let config = redis_config(&queue);
        let waking = Waking::new(conn.clone(), &jobs::wake_channel(&queue));
        Lane::Redis {
            storage: Box::new(RedisStorage::new(conn.clone()).with_config(config.clone())),
            now: Box::new(RedisStorage::new(waking).with_config(config)),
        }
    }

    /// A memory lane and the storage a worker consumes it from, built on our own channel. The
    /// storage's sink (which only its worker touches) and our lane hold separate senders.
    fn memory() -> (Self, MemoryStorage<T>) {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Task<T>>();
        let worker_side: Box<
            dyn futures::Sink<Task<T>, Error = MemoryStorageError> + Send + Sync + Unpin,
        > = Box::new(tx.clone().sink_map_err(MemoryStorageError::SendError));
        let sink = MemorySink::new(Arc::new(Mutex::new(worker_side)));
        (Lane::Memory(tx), MemoryStorage::new_with(sink, rx.boxed()))
    }

    /// Pushes a job to run now, or after `delay` (Redis only: the memory lane runs it now and
    /// the handler, finding it not yet due, leaves it to the sweeper).
    async fn push(&self, job: T, delay: Option<Duration>) -> Result<(), QueueError> {
        match self {
            Lane::Redis { storage, now } => {
                let pushed = match delay {
                    Some(d) => {
                        let task = TaskBuilder::new(job).run_after(d).build();
                        (**storage).clone().push_task(task).await
                    }
                    None => {
                        (**now)
                            .clone()
                            .push_task(TaskBuilder::new(job).build())
                            .await
                    }
                };
                pushed.map_err(|e| QueueError::Push(e.to_string()))?;
            }
            Lane::Memory(tx) => {
                // The id `MemorySink` would have given it; the worker's bookkeeping keys on it.
                let task = TaskBuilder::new(job)
                    .task_id(TaskId::from_string(uuid::Uuid::now_v7().to_string()))
                    .build();
                tx.unbounded_send(task)
                    .map_err(|e| QueueError::Push(e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// Both job queues.
#[derive(Clone)]
pub struct JobQueue {
    coaching: Lane<CoachingJob>,
    review: Lane<ReviewJob>,
    conn: Option<ConnectionManager>,
    /// The in-process consumers of the memory lanes (their health is this queue's readiness).
    consumers: Option<Arc<Consumers>>,
    /// The coaching load of the worker that consumes this queue in this process (the embedded
    /// mode's, or a `worker`'s own), which admission reads (`crate::load`).
    meter: Arc<Meter>,
    /// Where workers report their load in Redis (`load`); None in memory mode.
    load_key: Option<String>,
}

/// The storages an embedded worker consumes, and where its consumers report their health.
pub struct MemoryStorages {
    pub coaching: MemoryStorage<CoachingJob>,
    pub review: MemoryStorage<ReviewJob>,
    pub consumers: Arc<Consumers>,
}

/// apalis-redis configuration shared by pushers and workers (same queue, same timings).
pub fn redis_config(queue: &str) -> apalis_redis::Config {
    apalis_redis::Config::default()
        .queue(queue)
        .heartbeat_interval(jobs::HEARTBEAT)
        .missed_heartbeats(jobs::MISSED_HEARTBEATS)
        // A few jobs per fetch (see `consumers::fetch`): a backlog still spreads across workers
        // instead of landing on the first to look, and a busy worker takes what waits in one
        // round trip, not one each.
        .batch_size(crate::consumers::FETCH_BATCH)
        // No per-task lease in Redis: a fetch already moves the job into the worker's own
        // in-flight set, and a worker whose heartbeats stop has that set re-queued whatever its
        // leases say. Locking only added a script per job (`acquire_leases`: mark it "Running")
        // and one per heartbeat to renew it (issue 12).
        // Who runs a call is the database's lease (`calls.lease_owner`), which takeover reads.
        .lock_tasks(false)
        // apalis's scripts publish every job's end (and, for a job pushed without a schedule,
        // its arrival) on channels of their own, which nothing here hears: our workers wake on
        // `jobs::wake_channel`. Off, a finished job costs Redis no publish.
        .emit_events(false)
}

/// A Redis connection with a patient response timeout (the library's 500 ms default turns a
/// busy Redis into fatal worker errors).
pub async fn redis_connection(
    client: &redis::Client,
) -> Result<ConnectionManager, redis::RedisError> {
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_connection_timeout(Some(Duration::from_secs(5)));
    client.get_connection_manager_with_config(config).await
}

impl JobQueue {
    pub async fn redis(client: &redis::Client, namespace: &str) -> Result<Self, QueueError> {
        let conn = redis_connection(client).await?;
        Ok(Self {
            coaching: Lane::redis(&conn, jobs::coaching_queue(namespace)),
            review: Lane::redis(&conn, jobs::review_queue(namespace)),
            conn: Some(conn),
            consumers: None,
            meter: Arc::default(),
            load_key: Some(format!("{namespace}:load")),
        })
    }

    pub fn memory() -> (Self, MemoryStorages) {
        let (coaching, coaching_storage) = Lane::memory();
        let (review, review_storage) = Lane::memory();
        let consumers = Arc::new(Consumers::default());
        (
            Self {
                coaching,
                review,
                conn: None,
                consumers: Some(Arc::clone(&consumers)),
                meter: Arc::default(),
                load_key: None,
            },
            MemoryStorages {
                coaching: coaching_storage,
                review: review_storage,
                consumers,
            },
        )
    }

    pub async fn push(&self, job: CoachingJob) -> Result<(), QueueError> {
        // Counted before it is sent, so the worker taking it at once never finds it uncounted
        // (a failed in-process push means its consumer is gone, and nothing is admitted then).
        if self.in_process() {
            self.meter.queued();
        }
        self.coaching.push(job, None).await
    }

    /// The coaching load of this process's worker (`crate::load`).
    pub fn meter(&self) -> &Arc<Meter> {
        &self.meter
    }

    pub async fn push_review(
        &self,
        job: ReviewJob,
        delay: Option<Duration>,
    ) -> Result<(), QueueError> {
        self.review.push(job, delay).await
    }

    /// Pushes a job of either kind, to run now.
    pub async fn push_job(&self, job: Job) -> Result<(), QueueError> {
        match job {
            Job::Coaching(job) => self.push(job).await,
            Job::Review(job) => self.push_review(job, None).await,
        }
    }

    /// The embedded mode's in-process queue (its jobs die with the process).
    pub fn in_process(&self) -> bool {
        self.conn.is_none()
    }

    /// Readiness: can we reach the queue, and (in-process) is every consumer of it running?
    pub async fn ping(&self) -> Result<(), QueueError> {
        if let Some(conn) = &self.conn {
            let _: String = redis::cmd("PING").query_async(&mut conn.clone()).await?;
        }
        if let Some(consumers) = &self.consumers
            && !consumers.ready()
        {
            let down: Vec<String> = consumers
                .snapshot()
                .into_iter()
                .filter(|c| c.state != ConsumerState::Running)
                .map(|c| format!("{} {:?}", c.name, c.state))
                .collect();
            return Err(QueueError::Consumer(down.join(", ")));
        }
        Ok(())
    }

    /// Consumers alive on each queue (`coaching`, `review`), from apalis-redis's worker
    /// registrations: a consumer whose last heartbeat is within the orphan bound (`HEARTBEAT` ×
    /// `MISSED_HEARTBEATS`, after which its jobs go to others) counts. None in memory mode (the
    /// in-process consumers are checked by `ping`).
    pub async fn consumers(&self) -> Result<Option<Vec<(&'static str, u64)>>, QueueError> {
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
        let window = jobs::HEARTBEAT.as_secs() * jobs::MISSED_HEARTBEATS as u64;
        let mut out = Vec::new();
        for (name, cfg) in [("coaching", coaching), ("review", review)] {
            let live: u64 = redis::cmd("ZCOUNT")
                .arg(cfg.workers_set())
                .arg(format!("({}", now.saturating_sub(window)))
                .arg("+inf")
                .query_async(&mut conn.clone())
                .await?;
            out.push((name, live));
        }
        Ok(Some(out))
    }
}

fn lane_config<T>(lane: &Lane<T>) -> Option<apalis_redis::Config> {
    match lane {
        Lane::Redis { storage, .. } => Some(storage.get_config().clone()),
        Lane::Memory(_) => None,
    }
}

mod load;
mod stats;
mod waking;
pub use load::REPORT_EVERY as LOAD_REPORT_EVERY;
pub use stats::QueueStats;

#[cfg(test)]
mod tests;
