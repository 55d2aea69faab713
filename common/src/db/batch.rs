//! One statement for many callers (issue 31): on PostgreSQL every statement is a round trip, a
//! wake-up of a server process and a commit, whatever it writes. Callers hand their write to a
//! `Batcher`; at most `in_flight` batches run at once, and whatever arrived while they ran goes
//! in the next one. An idle batcher runs a lone caller's write at once, so nothing waits that
//! did not have to: batches grow only when writes queue, which is when their cost matters (the
//! same shape as SQLite's group commit, `db::write::group`).
//!
//! The batch is run by a task of its own, not by a caller: a caller that goes away (its client
//! hung up) must not take the other callers' writes with it.

use super::outage;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use sea_orm::{ConnAcquireErr, DbErr, RuntimeErr, sqlx};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};
use tokio::sync::oneshot;

/// Runs one batch: one answer per item, in their order.
pub type Run<I, O> = Arc<dyn Fn(Vec<I>) -> BoxFuture<'static, Vec<O>> + Send + Sync>;

pub struct Batcher<I, O> {
    shared: Arc<Shared<I, O>>,
}

impl<I, O> Clone for Batcher<I, O> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<I, O> {
    state: Mutex<State<I, O>>,
    run: Run<I, O>,
    max_batch: usize,
    max_in_flight: usize,
}

struct State<I, O> {
    waiting: VecDeque<(I, oneshot::Sender<O>)>,
    in_flight: usize,
}

/// The batch ended without an answer for this item (its runner panicked): whether the write
/// happened is not known.
#[derive(Debug)]
pub struct NoAnswer;

impl<I: Send + 'static, O: Send + 'static> Batcher<I, O> {
    pub fn new(max_batch: usize, max_in_flight: usize, run: Run<I, O>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    waiting: VecDeque::new(),
                    in_flight: 0,
                }),
                run,
                max_batch: max_batch.max(1),
                max_in_flight: max_in_flight.max(1),
            }),
        }
    }

    /// Hands `item` to the next batch and waits for its answer.
    pub async fn submit(&self, item: I) -> Result<O, NoAnswer> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut s = self.shared.lock();
            s.waiting.push_back((item, tx));
            let start = s.in_flight < self.shared.max_in_flight;
            if start {
                s.in_flight += 1;
            }
            start
        };
        if start {
            tokio::spawn(drive(Running(Arc::clone(&self.shared))));
        }
        rx.await.map_err(|_| NoAnswer)
    }
}

impl<I, O> Shared<I, O> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<I, O>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One runner's place among `max_in_flight`: given back when it drops, also by a panic, and
/// taken again at once for a new runner if writes are waiting (one may have arrived after this
/// runner found none, and seen every place taken).
struct Running<I: Send + 'static, O: Send + 'static>(Arc<Shared<I, O>>);

impl<I: Send + 'static, O: Send + 'static> Drop for Running<I, O> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.in_flight -= 1;
        if !s.waiting.is_empty()
            && s.in_flight < self.0.max_in_flight
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            s.in_flight += 1;
            rt.spawn(drive(Running(Arc::clone(&self.0))));
        }
    }
}

async fn drive<I: Send + 'static, O: Send + 'static>(running: Running<I, O>) {
    let shared = &running.0;
    loop {
        let batch: Vec<_> = {
            let mut s = shared.lock();
            let n = s.waiting.len().min(shared.max_batch);
            s.waiting.drain(..n).collect()
        };
        if batch.is_empty() {
            return;
        }
        let (items, answers): (Vec<I>, Vec<_>) = batch.into_iter().unzip();
        let outs = (shared.run)(items).await;
        for (answer, out) in answers.into_iter().zip(outs) {
            // A caller that went away no longer wants its answer.
            let _ = answer.send(out);
        }
    }
}

/// An error for each member of a batch whose statement met an unreachable database, of the same
/// kind as the batch's: its answer lost (the batch may have committed), or nothing sent. Each
/// member then rides it out and learns what its own write did, as it would alone.
pub fn same_kind(e: &DbErr, members: &str) -> DbErr {
    if outage::answer_lost(e) {
        DbErr::Query(RuntimeErr::SqlxError(Arc::new(sqlx::Error::Io(
            std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                format!("the batch of {members} lost its answer: {e}"),
            ),
        ))))
    } else {
        DbErr::ConnectionAcquire(ConnAcquireErr::Timeout)
    }
}

/// A timestamp as PostgreSQL reads it in a batch's JSON, to the microsecond it stores
/// (truncated, as the driver binds one).
pub fn at(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use tokio::sync::Notify;

    /// A runner that records each batch's size and holds the first batch until released.
    fn recording(sizes: Arc<Mutex<Vec<usize>>>, gate: Arc<Notify>) -> Run<u32, u32> {
        let first = Arc::new(AtomicUsize::new(0));
        Arc::new(move |items: Vec<u32>| {
            let (sizes, gate, first) = (Arc::clone(&sizes), Arc::clone(&gate), Arc::clone(&first));
            Box::pin(async move {
                sizes.lock().unwrap().push(items.len());
                if first.fetch_add(1, SeqCst) == 0 {
                    gate.notified().await;
                }
                items.into_iter().map(|i| i * 10).collect()
            })
        })
    }

    #[tokio::test]
    async fn a_lone_write_runs_at_once_and_queued_ones_share_a_batch() {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Notify::new());
        let b = Batcher::new(64, 1, recording(Arc::clone(&sizes), Arc::clone(&gate)));
        // The first runs alone, and is held; the next ten queue behind it.
        let first = tokio::spawn({
            let b = b.clone();
            async move { b.submit(1).await.unwrap() }
        });
        while sizes.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let rest: Vec<_> = (2..12)
            .map(|i| {
                let b = b.clone();
                tokio::spawn(async move { b.submit(i).await.unwrap() })
            })
            .collect();
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        gate.notify_one();
        assert_eq!(first.await.unwrap(), 10);
        for (i, t) in (2..12).zip(rest) {
            // Each gets its own answer, not another's.
            assert_eq!(t.await.unwrap(), i * 10);
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 10]);
    }

    #[tokio::test]
    async fn batches_are_capped_and_a_panicking_run_answers_nothing_but_frees_its_place() {
        let calls = Arc::new(AtomicUsize::new(0));
        let run: Run<u32, u32> = Arc::new({
            let calls = Arc::clone(&calls);
            move |items: Vec<u32>| {
                let n = calls.fetch_add(1, SeqCst);
                Box::pin(async move {
                    assert!(n != 0, "the first batch fails");
                    assert!(items.len() <= 3);
                    items
                })
            }
        });
        let b = Batcher::new(3, 1, run);
        assert!(b.submit(7).await.is_err());
        let all: Vec<_> = (0..10)
            .map(|i| {
                let b = b.clone();
                tokio::spawn(async move { b.submit(i).await.unwrap() })
            })
            .collect();
        for (i, t) in (0..10).zip(all) {
            assert_eq!(t.await.unwrap(), i);
        }
    }
}
