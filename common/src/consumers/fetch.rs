//! When a Redis consumer fetches, and how much.
//!
//! apalis-redis fetches again as soon as a fetch returned work, so the first worker to look
//! takes a whole backlog (orphans re-queued after a crash come back as one batch, and the next
//! crash catches them all again). `FairFetch` arms a consumer for one job per signal: a wake-up
//! published on the queue's channel (after every push, and after every job a consumer takes,
//! since more may be waiting) or its own poll tick. Every worker hears the same wake-ups, and a
//! worker that just took a job waits `COOLDOWN` before it takes another, so the others get
//! their turn: a backlog drains in rounds of about one job per worker, spread across workers.
//! A worker holding fewer than `AT_ONCE` jobs takes the next at once: spreading matters for
//! jobs that hold a worker (a slow model), and a job that ended holds nothing. Without that
//! exception the cooldown was a ceiling of 100 jobs per second per worker and queue, whatever
//! the jobs cost (issue 12: one PostgreSQL + Redis worker made 79-83 paid calls/s; with the
//! exception for an idle worker only, 133, one job at a time).

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

/// A Redis backend (fetching one job at a time: batch size 1) that fetches only when armed.
pub struct FairFetch<B> {
    backend: B,
    tick: tokio::time::Interval,
    wake: mpsc::UnboundedReceiver<()>,
    armed: bool,
    /// Set after taking a job: no fetch before it fires.
    cooldown: Option<Pin<Box<tokio::time::Sleep>>>,
    announce: Announce,
    /// The waker the inner backend gets: it tells its own wake-ups (a fetch's answer) apart
    /// from the task's other ones.
    inner: Arc<InnerWake>,
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
    /// `backend` fetches one job per fetch; `wake` hears the queue's channel (`channel`), and
    /// `every` is the poll tick that backs it up.
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
            cooldown: None,
            announce: Announce { conn, channel },
            inner: Arc::default(),
        }
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
            self.armed = true;
        }
        while let Poll::Ready(Some(())) = self.wake.poll_recv(cx) {
            self.armed = true;
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
            // (No fetch is in flight during a cooldown: it starts when a job was taken, batch
            // size one.)
            if worker.task_count() >= AT_ONCE && cooldown.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.cooldown = None;
        }
        let waker = std::task::Waker::from(Arc::clone(&self.inner));
        let next = self
            .backend
            .poll_next(&mut Context::from_waker(&waker), worker);
        match &next {
            // Disarmed after taking a job: with a batch size of one, the inner backend then
            // holds nothing and has no fetch in flight, so stopping here abandons nothing.
            Poll::Ready(Some(Ok(_))) => {
                self.cooldown = Some(Box::pin(tokio::time::sleep(COOLDOWN)));
                self.announce.send();
                self.armed = false;
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
