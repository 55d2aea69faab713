//! Running the workers (coaching jobs, review jobs, and the cron sweeper): against Redis (the
//! `worker` binary, any number of processes) or in-process on the memory backend (embedded).

use crate::{
    jobs::{Deps, coaching_job},
    review::{review_job, sweep::sweep_tick},
};
use apalis::prelude::*;
use grove_common::{
    jobs::{self, CoachingJob, ReviewJob},
    queue::{self, JobQueue, MemoryStorages},
};
use serde::{Serialize, de::DeserializeOwned};
use std::{
    future::Future,
    str::FromStr,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};
use tokio::sync::{mpsc, watch};

/// How many jobs of one kind a worker process runs at once (they are I/O-bound).
pub const CONCURRENCY: usize = 32;

/// Wakes the Redis backend on a timer and on every wake-up message, and drains both sources
/// before returning so that a waker stays registered with each. (apalis-redis's own polling can
/// lose a wake-up and then sleep until the next heartbeat.)
struct WakeStrategy {
    tick: tokio::time::Interval,
    wake: mpsc::UnboundedReceiver<()>,
}

impl PollStrategy for WakeStrategy {
    fn poll_drive(&mut self, cx: &mut Context<'_>, _snapshot: &PollSnapshot) -> Poll<Option<()>> {
        let mut fired = false;
        while self.tick.poll_tick(cx).is_ready() {
            fired = true;
        }
        while let Poll::Ready(Some(())) = self.wake.poll_recv(cx) {
            fired = true;
        }
        if fired {
            Poll::Ready(Some(()))
        } else {
            Poll::Pending
        }
    }
}

/// One SUBSCRIBE per queue, forwarding wake-ups to the strategy.
fn subscribe_wakeups(client: redis::Client, channel: String) -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        use futures::StreamExt;
        while !tx.is_closed() {
            match client.get_async_pubsub().await {
                Ok(mut pubsub) => {
                    if pubsub.subscribe(&channel).await.is_ok() {
                        let mut stream = pubsub.on_message();
                        while stream.next().await.is_some() {
                            if tx.send(()).is_err() {
                                return;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "wake-up subscription failed; polling continues")
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    rx
}

fn redis_lane<T: Serialize + DeserializeOwned + Send + Sync + Unpin + 'static>(
    client: &redis::Client,
    conn: redis::aio::ConnectionManager,
    queue_name: String,
) -> PollWith<apalis_redis::RedisStorage<T>, WakeStrategy> {
    let mut tick = tokio::time::interval(jobs::POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let strategy = WakeStrategy {
        tick,
        wake: subscribe_wakeups(client.clone(), jobs::wake_channel(&queue_name)),
    };
    apalis_redis::RedisStorage::<T>::new(conn)
        .with_config(queue::redis_config(&queue_name))
        .poll_with_strategy(strategy)
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("worker: {0}")]
    Worker(String),
    #[error("sweep schedule: {0}")]
    Schedule(String),
}

/// A cron schedule firing every `every` (1 to 59 seconds).
fn sweep_schedule(
    every: Duration,
) -> Result<apalis_cron::CronScheduler<cron::Schedule>, RuntimeError> {
    let secs = every.as_secs().clamp(1, 59);
    let schedule = cron::Schedule::from_str(&format!("*/{secs} * * * * *"))
        .map_err(|e| RuntimeError::Schedule(e.to_string()))?;
    Ok(apalis_cron::CronScheduler::new(schedule))
}

async fn until(mut stop: watch::Receiver<bool>) -> Result<(), std::io::Error> {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            break;
        }
    }
    Ok(())
}

/// Runs every worker against Redis until `shutdown` resolves; in-flight jobs finish first.
pub async fn run_redis(
    client: redis::Client,
    namespace: &str,
    sweep_every: Duration,
    deps: Arc<Deps>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RuntimeError> {
    let conn = queue::redis_connection(&client).await?;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let coaching = WorkerBuilder::new(format!("grove-coaching-{id}"))
        .backend(redis_lane::<CoachingJob>(
            &client,
            conn.clone(),
            jobs::coaching_queue(namespace),
        ))
        .concurrency(CONCURRENCY)
        .data(Arc::clone(&deps))
        .build(coaching_job)
        .run_until(until(stopped.clone()));
    let review = WorkerBuilder::new(format!("grove-review-{id}"))
        .backend(redis_lane::<ReviewJob>(
            &client,
            conn,
            jobs::review_queue(namespace),
        ))
        .concurrency(CONCURRENCY)
        .data(Arc::clone(&deps))
        .build(review_job)
        .run_until(until(stopped.clone()));
    let sweeper = WorkerBuilder::new(format!("grove-sweeper-{id}"))
        .backend(sweep_schedule(sweep_every)?)
        .data(deps)
        .build(sweep_tick)
        .run_until(until(stopped));
    tracing::info!(namespace, concurrency = CONCURRENCY, "worker ready");
    let (a, b, c) = tokio::join!(coaching, review, sweeper);
    for r in [a, b, c] {
        r.map_err(|e| RuntimeError::Worker(e.to_string()))?;
    }
    Ok(())
}

/// Starts in-process workers on the memory backend, consuming `storages`; they stop when
/// `shutdown` resolves.
pub fn spawn_embedded(
    deps: Arc<Deps>,
    storages: MemoryStorages,
    sweep_every: Duration,
    shutdown: watch::Receiver<bool>,
) -> Result<(), RuntimeError> {
    let coaching = WorkerBuilder::new("grove-coaching-embedded")
        .backend(storages.coaching)
        .concurrency(CONCURRENCY)
        .data(Arc::clone(&deps))
        .build(coaching_job);
    let review = WorkerBuilder::new("grove-review-embedded")
        .backend(storages.review)
        .concurrency(CONCURRENCY)
        .data(Arc::clone(&deps))
        .build(review_job);
    let sweeper = WorkerBuilder::new("grove-sweeper-embedded")
        .backend(sweep_schedule(sweep_every)?)
        .data(deps)
        .build(sweep_tick);
    let (s1, s2, s3) = (shutdown.clone(), shutdown.clone(), shutdown);
    tokio::spawn(async move {
        if let Err(e) = coaching.run_until(until(s1)).await {
            tracing::error!(error = %e, "embedded coaching worker stopped");
        }
    });
    tokio::spawn(async move {
        if let Err(e) = review.run_until(until(s2)).await {
            tracing::error!(error = %e, "embedded review worker stopped");
        }
    });
    tokio::spawn(async move {
        if let Err(e) = sweeper.run_until(until(s3)).await {
            tracing::error!(error = %e, "embedded sweeper stopped");
        }
    });
    tracing::info!("embedded workers ready (in-process queues)");
    Ok(())
}

/// Convenience for the embedded mode: the queue to push to and the storages to consume.
pub fn memory_queue() -> (JobQueue, MemoryStorages) {
    JobQueue::memory()
}
