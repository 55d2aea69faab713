//! When a Redis consumer fetches, and how much.
//!
//! apalis-redis fetches again as soon as a fetch returned work, so the first worker to look
//! takes a whole backlog (orphans re-queued after a crash come back as one batch, and the next
//! crash catches them all again). `FairFetch` arms a consumer for one fetch of at most
//! `FETCH_BATCH` jobs per signal: a wake-up published on the queue's channel (after every push),
//! its own poll tick, or its own last take (more may be waiting). A worker that just took a job
//! waits `COOLDOWN` before it takes another once it holds `AT_ONCE`, so the others get their
//! turn: a backlog drains in rounds spread across workers. Spreading matters for jobs that hold
//! a worker (a slow model); a job that ended holds nothing, so below `AT_ONCE` the next is taken
//! at once. Without that exception the cooldown was a ceiling of 100 jobs per second per worker
//! and queue, whatever the jobs cost (issue 12: one PostgreSQL + Redis worker made 79-83 paid
//! calls/s; with the exception for an idle worker only, 133, one job at a time).
//!
//! The same ceiling held jobs that wait on a slow model: a worker holding more than `AT_ONCE`
//! took one per `COOLDOWN`, so with a 10 s model one worker could never hold more than about
//! 1,000 calls, and 2,000 paid calls at once on PostgreSQL + Redis went through at 60 a second
//! (issue 31, `--bin inflight`). A turn is only worth leaving to a worker that would take it:
//! the coaching consumer knows the others from their load reports (`Peers`), and waits its turn
//! only while it holds `AT_ONCE` more than the least busy of them with room to spare. Alone, or
//! beside workers that are as busy or full, it takes what waits at the speed of its fetches.
//!
//! A fetch takes up to `FETCH_BATCH` (= `AT_ONCE`) jobs, what a worker may start at once anyway:
//! under load a worker takes what waits in one round trip instead of one each (issue 12:
//! `--bin paid` at 64 connections, 593 and 573 paid calls/s fetching one, 637 and 627 fetching
//! four, 638 and 631 fetching eight; Redis's CPU per call fell by a quarter). The price: jobs a
//! worker fetched wait for its own turn (its cooldown, or a free slot when it runs
//! `WORKER_CONCURRENCY` jobs already), at most `FETCH_BATCH - 1` of them; a worker that dies has
//! them re-queued with the rest of what it held.
//!
//! Every worker hears every push's wake-up, so pushed jobs need no further signal. A job found
//! by a poll tick alone came without one (orphans re-queued after a crash, a delayed job that
//! fell due, a lost wake-up): the worker that found it announces it on the channel, so the
//! others look too. It used to announce every job it took, which cost each job a publish and
//! every worker an empty fetch. With the batch and no task leases (`queue::redis_config`), a job
//! costs 2.1 scripts and 3.0 publishes instead of 4.2 and 5.1 (issue 12, `INFO commandstats`
//! around `--bin paid -- 5 3000 postgres`). At low load a worker still makes one empty fetch
//! after each take: it cannot tell whether its fetch's answer held the last job waiting.

use apalis_core::{
    backend::{Backend, BackendConfig, WireFormatBackend},
    worker::context::WorkerContext,
};
use redis::{AsyncCommands, aio::ConnectionManager};
use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    task::{Context, Poll},
    time::Duration,
};
use tokio::sync::{mpsc, watch};

/// One subscription to a queue's wake-up channel per process, fanned out to the consumers that
/// are alive (each rebuild of a consumer takes a fresh receiver).
#[derive(Clone, Debug, Default)]
pub struct WakeFeed {
    receivers: Arc<Mutex<Vec<mpsc::UnboundedSender<()>>>>,
}

impl WakeFeed {
    /// Subscribes to `channel` until `stop` turns true, re-subscribing after any error.
    pub fn subscribe(client: redis::Client, channel: String, stop: watch::Receiver<bool>) -> Self {
        let feed = Self::default();
        let out = feed.clone();
        tokio::spawn(async move {
            use futures::StreamExt;
            let mut stop = stop;
            while !*stop.borrow() {
                match client.get_async_pubsub().await {
                    Ok(mut pubsub) => {
                        if pubsub.subscribe(&channel).await.is_ok() {
                            let mut stream = pubsub.on_message();
                            loop {
                                tokio::select! {
                                    msg = stream.next() => match msg {
                                        Some(_) => out.fan_out(),
                                        None => break,
                                    },
                                    _ = stop.changed() => return,
                                }
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "wake-up subscription failed; polling continues")
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = stop.changed() => return,
                }
            }
        });
        feed
    }

    /// A receiver of every wake-up from now on.
    pub fn receiver(&self) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().push(tx);
        rx
    }

    fn fan_out(&self) {
        self.lock().retain(|tx| tx.send(()).is_ok());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::UnboundedSender<()>>> {
        self.receivers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// How long a worker that took a job leaves the next one to the others.
pub const COOLDOWN: Duration = Duration::from_millis(10);

/// Jobs a worker may hold and still take the next without a cooldown: a backlog still spreads
/// (each worker takes this many, then one per `COOLDOWN`), and quick jobs overlap.
pub const AT_ONCE: usize = 4;

/// Jobs one fetch takes at most (apalis-redis's batch size, `queue::redis_config`).
pub const FETCH_BATCH: usize = AT_ONCE;

/// What a consumer knows of the other workers on its queue (their load reports, read every
/// second: `JobQueue::peers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Peers {
    /// Not read yet (or no reports on this queue): others may be waiting for their turn.
    #[default]
    Unknown,
    /// No other worker reported lately with room for another job.
    None,
    /// The fewest jobs held by another live worker with room to spare.
    Least(u64),
}

/// Whether a consumer holding `held` jobs leaves the next one to the others for a `COOLDOWN`.
pub fn waits_its_turn(held: usize, peers: Peers) -> bool {
    held >= AT_ONCE
        && match peers {
            Peers::Unknown => true,
            Peers::None => false,
            Peers::Least(least) => held as u64 >= least.saturating_add(AT_ONCE as u64),
        }
}

/// A Redis backend (fetching up to `FETCH_BATCH` jobs at a time) that fetches only when armed.
pub struct FairFetch<B> {
    backend: B,
    tick: tokio::time::Interval,
    wake: mpsc::UnboundedReceiver<()>,
    armed: bool,
    /// Armed by the poll tick alone (no wake-up heard, not its own last find): a job it finds
    /// came without a signal, so it is announced.
    tick_only: bool,
    /// Set after taking a job: no fetch before it fires.
    cooldown: Option<Pin<Box<tokio::time::Sleep>>>,
    announce: Announce,
    /// The waker the inner backend gets: it tells its own wake-ups (a fetch's answer) apart
    /// from the task's other ones.
    inner: Arc<InnerWake>,
    /// While true, no fetch (the worker's database is away, or it is draining).
    paused: Option<watch::Receiver<bool>>,
    /// The other workers, when this consumer's queue has load reports (coaching).
    peers: Option<watch::Receiver<Peers>>,
}

/// Records that the inner backend asked to be polled, and passes the wake-up on to the task.
#[derive(Default)]
struct InnerWake {
    woke: std::sync::atomic::AtomicBool,
    task: futures::task::AtomicWaker,
}

impl std::task::Wake for InnerWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woke.store(true, std::sync::atomic::Ordering::Release);
        self.task.wake();
    }
}

/// Publishes "there may be more" on the queue's wake-up channel.
struct Announce {
    conn: ConnectionManager,
    channel: String,
}

impl Announce {
    fn send(&self) {
        let mut conn = self.conn.clone();
        let channel = self.channel.clone();
        tokio::spawn(async move {
            let sent: redis::RedisResult<i64> = conn.publish(&channel, "1").await;
            if let Err(e) = sent {
                tracing::debug!(error = %e, "could not announce a taken job");
            }
        });
    }
}

impl<B> FairFetch<B> {
    /// `backend` fetches up to `FETCH_BATCH` jobs per fetch; `wake` hears the queue's channel
    /// (`channel`), and `every` is the poll tick that backs it up.
    pub fn new(
        backend: B,
        wake: mpsc::UnboundedReceiver<()>,
        conn: ConnectionManager,
        channel: String,
        every: Duration,
    ) -> Self {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Self {
            backend,
            tick,
            wake,
            armed: true,
            // At start-up, what it finds (a backlog left while no worker ran) came unsignalled.
            tick_only: true,
            cooldown: None,
            announce: Announce { conn, channel },
            inner: Arc::default(),
            paused: None,
            peers: None,
        }
    }

    /// Takes no job while `paused` is true (the poll tick looks again).
    pub fn paused_while(mut self, paused: watch::Receiver<bool>) -> Self {
        self.paused = Some(paused);
        self
    }

    /// Leaves turns only to the workers `peers` reports (without it, to any: `Peers::Unknown`).
    pub fn beside(mut self, peers: watch::Receiver<Peers>) -> Self {
        self.peers = Some(peers);
        self
    }
}

impl<B: Backend> Backend for FairFetch<B> {
    type Task = B::Task;
    type Error = B::Error;

    fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.backend.poll_ready(cx, worker)
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Option<Result<Self::Task, Self::Error>>> {
        // Drain both signals so that each keeps a waker registered.
        while self.tick.poll_tick(cx).is_ready() {
            if !self.armed {
                self.armed = true;
                self.tick_only = true;
            }
        }
        while let Poll::Ready(Some(())) = self.wake.poll_recv(cx) {
            self.armed = true;
            self.tick_only = false;
        }
        // Paused: nothing is fetched; the signals stay armed for when it resumes (the poll
        // tick, whose waker is registered above, looks again within `every`).
        if self.paused.as_ref().is_some_and(|p| *p.borrow()) {
            return Poll::Pending;
        }
        // The task is also polled for wake-ups that are not ours (apalis polls a worker's
        // backends together): only a signal, or the inner backend's own wake-up (the answer to
        // a fetch in flight), polls it. Polling it otherwise starts a fetch each time: two idle
        // consumers in one process woke each other into about 2,200 empty fetches a second
        // each (issue 12, `redis-cli monitor`).
        self.inner.task.register(cx.waker());
        let woke = self
            .inner
            .woke
            .swap(false, std::sync::atomic::Ordering::Acquire);
        if !self.armed && !woke {
            return Poll::Pending;
        }
        if let Some(cooldown) = self.cooldown.as_mut() {
            // apalis counts a job from the moment it is handed over until it ends, and wakes
            // the worker when the count falls to zero; the poll tick and wake-ups come anyway.
            // (No fetch is in flight during a cooldown: a take comes from a fetch's answer, and
            // the next fetch starts only once its jobs are taken.)
            let peers = self.peers.as_ref().map_or(Peers::Unknown, |p| *p.borrow());
            if waits_its_turn(worker.task_count(), peers) && cooldown.as_mut().poll(cx).is_pending()
            {
                return Poll::Pending;
            }
            self.cooldown = None;
        }
        let waker = std::task::Waker::from(Arc::clone(&self.inner));
        let next = self
            .backend
            .poll_next(&mut Context::from_waker(&waker), worker);
        match &next {
            // Armed again after taking a job: the fetch's other jobs are taken from its answer,
            // and once they are, more may be waiting (a burst's wake-ups arrive while a fetch is
            // in flight and are spent on it). A cooldown here abandons nothing: the inner
            // backend has no fetch in flight, and what it holds is this worker's to take.
            Poll::Ready(Some(Ok(_))) => {
                self.cooldown = Some(Box::pin(tokio::time::sleep(COOLDOWN)));
                if self.tick_only {
                    self.announce.send();
                }
                self.armed = true;
                self.tick_only = false;
                cx.waker().wake_by_ref();
            }
            // A fetch in flight (its answer wakes `inner`) or one that came back empty: either
            // way this signal is spent.
            Poll::Pending => self.armed = false,
            Poll::Ready(_) => {}
        }
        next
    }

    fn poll_close(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.backend.poll_close(cx, worker)
    }
}

impl<B: BackendConfig> BackendConfig for FairFetch<B> {
    type Id = B::Id;
    type Args = B::Args;
    type Kind = B::Kind;
    type Config = B::Config;
    type Layer = B::Layer;

    fn config(&self) -> &Self::Config {
        self.backend.config()
    }

    fn middleware(&mut self, worker: &mut WorkerContext) -> Self::Layer {
        self.backend.middleware(worker)
    }
}

impl<B: WireFormatBackend> WireFormatBackend for FairFetch<B> {
    type Compact = B::Compact;
    type Codec = B::Codec;

    fn codec(&self) -> &Self::Codec {
        self.backend.codec()
    }
}

#[cfg(test)]
mod tests {
    use super::{AT_ONCE, Peers, waits_its_turn};

    #[test]
    fn a_busy_worker_leaves_turns_only_to_a_less_busy_one_with_room() {
        // Below `AT_ONCE` the next job is taken at once, whoever else is there.
        for peers in [Peers::Unknown, Peers::None, Peers::Least(0)] {
            assert!(!waits_its_turn(AT_ONCE - 1, peers), "{peers:?}");
        }
        // Not knowing the others yet, it leaves them their turn, as it always did.
        assert!(waits_its_turn(AT_ONCE, Peers::Unknown));
        assert!(waits_its_turn(5_000, Peers::Unknown));
        // Alone (or beside full workers): no turn to leave, however much it holds.
        assert!(!waits_its_turn(5_000, Peers::None));
        // Beside one that holds less: it waits once it holds `AT_ONCE` more than that one.
        assert!(waits_its_turn(AT_ONCE, Peers::Least(0)));
        assert!(!waits_its_turn(100 + AT_ONCE - 1, Peers::Least(100)));
        assert!(waits_its_turn(100 + AT_ONCE, Peers::Least(100)));
        // The less busy one itself goes on taking.
        assert!(!waits_its_turn(100, Peers::Least(500)));
    }
}
