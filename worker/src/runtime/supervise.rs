//! One supervised Redis consumer. apalis-redis ends a consumer at its first Redis error (a
//! timeout, a reset connection, a restarted server that forgot the worker), so each generation
//! of the consumer gets a fresh connection and a new worker name (the old name may still look
//! alive to Redis, which refuses to register it again until it expires). The old name's
//! in-flight jobs go back to the queue when it expires and run once more; the jobs themselves
//! keep running on their own tasks (`jobs::detached`), so that run finds them done or leased.

use backon::{BackoffBuilder, ExponentialBuilder};
use grove_common::{
    consumers::{ConsumerHandle, FairFetch, Peers, WakeFeed},
    jobs,
    queue::{self, redis_connection},
};
use serde::{Serialize, de::DeserializeOwned};
use std::{future::Future, sync::Arc, time::Duration};
use tokio::{sync::watch, time::Instant};

use super::RuntimeError;

/// The first pause after a failure, doubled up to `MAX_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// How long to wait for a new connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The pauses between generations of a failing consumer: `FIRST_PAUSE` doubling to `MAX_PAUSE`,
/// for as long as the lane's `limit` allows.
fn pauses() -> impl Iterator<Item = Duration> {
    ExponentialBuilder::new()
        .with_min_delay(FIRST_PAUSE)
        .with_max_delay(MAX_PAUSE)
        .without_max_times()
        .build()
}

pub(super) type Backend<T> = FairFetch<apalis_redis::RedisStorage<T>>;

pub(super) struct Lane {
    pub kind: &'static str,
    /// Each generation is named `{base_name}-{n}`.
    pub base_name: String,
    pub client: redis::Client,
    pub queue: String,
    pub health: ConsumerHandle,
    pub limit: Duration,
    pub stopped: watch::Receiver<bool>,
    /// Stops the whole process's workers when this consumer gives up.
    pub stop: Arc<watch::Sender<bool>>,
    /// True while the process takes no jobs (its database is away).
    pub paused: watch::Receiver<bool>,
    /// The other workers on this queue, where they report their load (coaching).
    pub peers: Option<watch::Receiver<Peers>>,
}

impl Lane {
    /// Runs generations of the consumer built by `start` (name, backend, stop signal, health)
    /// until shutdown (`Ok`) or until it has failed for `limit` without a heartbeat (`Err`,
    /// after stopping the other consumers).
    pub async fn run<T, F, Fut, E>(self, start: F) -> Result<(), RuntimeError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + Unpin + 'static,
        F: Fn(String, Backend<T>, watch::Receiver<bool>, ConsumerHandle) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let wake = WakeFeed::subscribe(
            self.client.clone(),
            jobs::wake_channel(&self.queue),
            self.stopped.clone(),
        );
        let mut schedule = pauses();
        let mut failing_since: Option<Instant> = None;
        let mut generation = 0u32;
        loop {
            if *self.stopped.borrow() {
                self.health.stopped();
                return Ok(());
            }
            generation += 1;
            let beats_before = self.health.last_heartbeat();
            let error = match self.generation(&start, &wake, generation).await {
                Ok(()) if *self.stopped.borrow() => {
                    self.hand_back(generation).await;
                    self.health.stopped();
                    return Ok(());
                }
                Ok(()) => "the consumer ended by itself".to_owned(),
                Err(e) => e,
            };
            if self.health.last_heartbeat() != beats_before {
                // It ran (registered, heartbeat) before failing: a new fault, a fresh budget.
                failing_since = None;
                schedule = pauses();
            }
            let since = *failing_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= self.limit {
                tracing::error!(lane = self.kind, %error, limit = ?self.limit, "queue consumer could not recover; stopping the worker");
                self.health.dead(&error);
                let _ = self.stop.send(true);
                return Err(RuntimeError::GaveUp {
                    lane: self.kind,
                    limit: self.limit,
                    error,
                });
            }
            self.health.failed(&error);
            let pause = schedule.next().unwrap_or(MAX_PAUSE);
            tracing::warn!(lane = self.kind, generation, %error, retry_in = ?pause, "queue consumer lost Redis; rebuilding it");
            let mut stopped = self.stopped.clone();
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stopped.wait_for(|s| *s) => {}
            }
        }
    }

    /// At a graceful stop, after the consumer finished every job it started: the jobs it had
    /// fetched and not started go back to the queue now, for the other workers, instead of
    /// waiting for this worker's name to expire (`HEARTBEAT` × `MISSED_HEARTBEATS`); and the
    /// name leaves the queue's workers (the api counts consumers there).
    async fn hand_back(&self, generation: u32) {
        const HAND_BACK: &str = r"
local jobs = redis.call('smembers', KEYS[1])
if #jobs > 0 then
  redis.call('rpush', KEYS[2], unpack(jobs))
  redis.call('del', KEYS[1])
end
redis.call('zrem', KEYS[3], ARGV[1])
return #jobs
";
        let name = format!("{}-{generation}", self.base_name);
        let config = queue::redis_config(&self.queue);
        let handed = async {
            let mut conn = redis_connection(&self.client).await?;
            let n: u64 = redis::Script::new(HAND_BACK)
                .key(format!("{}:{name}", config.inflight_jobs_set()))
                .key(config.active_jobs_list())
                .key(config.workers_set())
                .arg(&name)
                .invoke_async(&mut conn)
                .await?;
            if n > 0 {
                use redis::AsyncCommands;
                let _: i64 = conn.publish(jobs::wake_channel(&self.queue), "1").await?;
            }
            Ok::<u64, redis::RedisError>(n)
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, handed).await {
            Ok(Ok(n)) => tracing::info!(
                lane = self.kind,
                handed_back = n,
                "consumer stopped; jobs not started handed back"
            ),
            // They come back when the name expires, as after a crash.
            Ok(Err(e)) => tracing::warn!(lane = self.kind, error = %e, "could not hand jobs back"),
            Err(_) => tracing::warn!(lane = self.kind, "could not hand jobs back in time"),
        }
    }

    /// One generation: connect, build, run until it fails or shutdown stops it.
    async fn generation<T, F, Fut, E>(
        &self,
        start: &F,
        wake: &WakeFeed,
        generation: u32,
    ) -> Result<(), String>
    where
        T: Serialize + DeserializeOwned + Send + Sync + Unpin + 'static,
        F: Fn(String, Backend<T>, watch::Receiver<bool>, ConsumerHandle) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let conn = match tokio::time::timeout(CONNECT_TIMEOUT, redis_connection(&self.client)).await
        {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(format!("connect: {e}")),
            Err(_) => return Err("connect: timed out".into()),
        };
        let storage = apalis_redis::RedisStorage::<T>::new(conn.clone())
            .with_config(queue::redis_config(&self.queue));
        let backend = FairFetch::new(
            storage,
            wake.receiver(),
            conn,
            jobs::wake_channel(&self.queue),
            jobs::POLL_INTERVAL,
        )
        .paused_while(self.paused.clone());
        let backend = match &self.peers {
            Some(peers) => backend.beside(peers.clone()),
            None => backend,
        };
        let name = format!("{}-{generation}", self.base_name);
        start(name, backend, self.stopped.clone(), self.health.clone())
            .await
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_a_quarter_second_and_stay_at_five_seconds() {
        let ms: Vec<u128> = pauses().take(8).map(|d| d.as_millis()).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    }
}
