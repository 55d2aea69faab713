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
use futures::future::{BoxFuture, join_all};
use sea_orm::{
    ConnAcquireErr, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, QueryResult, RuntimeErr,
    Statement, Value, sqlx,
};
use std::{
    collections::VecDeque,
    future::Future,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::{Duration, Instant},
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
    /// Each write, where its answer goes, and when it was handed over.
    waiting: VecDeque<(I, oneshot::Sender<O>, Instant)>,
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
            s.waiting.push_back((item, tx, Instant::now()));
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

    /// How long the oldest write not yet sent has waited for a batch (zero when none waits):
    /// how far behind the database is, which admission reads before a price.
    pub fn waited(&self) -> Duration {
        let s = self.shared.lock();
        s.waiting
            .front()
            .map_or(Duration::ZERO, |(_, _, since)| since.elapsed())
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
        let (items, answers): (Vec<I>, Vec<_>) =
            batch.into_iter().map(|(i, answer, _)| (i, answer)).unzip();
        let outs = (shared.run)(items).await;
        for (answer, out) in answers.into_iter().zip(outs) {
            // A caller that went away no longer wants its answer.
            let _ = answer.send(out);
        }
    }
}

/// Batches written at once of one kind of write: one writing while the next gathers, and a
/// second so that a commit's flush does not stop every writer.
const IN_FLIGHT: usize = 2;

/// One kind of write on one database, batched on PostgreSQL by `run` (which writes one batch:
/// `write` below). SQLite's writes are their callers' own, together by group commit
/// (`db::write::group`), so there is nothing to batch there.
pub struct Batched<I, O> {
    db: DatabaseConnection,
    batch: Option<Batcher<I, Result<O, DbErr>>>,
    /// Writes answered by a statement they shared with another.
    shared: Arc<AtomicU64>,
}

impl<I, O> Clone for Batched<I, O> {
    fn clone(&self) -> Self {
        Self {
            db: self.db.clone(),
            batch: self.batch.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> Batched<I, O> {
    /// `max_batch` writes in a statement at most (`DATABASE_WRITE_BATCH`; 1: each alone). Its
    /// cost grows with them; the round trip does not.
    pub fn new<F, Fut>(db: DatabaseConnection, max_batch: usize, run: F) -> Self
    where
        F: Fn(DatabaseConnection, Arc<AtomicU64>, Vec<I>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Result<O, DbErr>>> + Send + 'static,
    {
        let shared = Arc::new(AtomicU64::new(0));
        let batch = (db.get_database_backend() == DbBackend::Postgres).then(|| {
            let (on, counted) = (db.clone(), Arc::clone(&shared));
            let run: Run<I, Result<O, DbErr>> =
                Arc::new(move |rows| Box::pin(run(on.clone(), Arc::clone(&counted), rows)));
            Batcher::new(max_batch, IN_FLIGHT, run)
        });
        Self { db, batch, shared }
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// How many writes so far were answered by a statement they shared with another.
    pub fn shared(&self) -> u64 {
        self.shared.load(Relaxed)
    }

    /// How long the oldest write waiting for a batch has waited (`Batcher::waited`; zero where
    /// writes are not batched).
    pub fn waited(&self) -> Duration {
        self.batch.as_ref().map_or(Duration::ZERO, Batcher::waited)
    }

    /// `item`'s answer from the next batch; the item back where writes are not batched.
    pub async fn submit(&self, item: I) -> Result<Result<O, DbErr>, I> {
        let Some(batch) = &self.batch else {
            return Err(item);
        };
        Ok(batch.submit(item).await.unwrap_or_else(|NoAnswer| {
            Err(DbErr::Custom("a batch ended without an answer".into()))
        }))
    }
}

/// Writes `rows` as one batch: the members `together` marks in one statement (`many`, handed them
/// as one JSON array written by `json`, and how many they are), then the rest alone (`alone`); every member alone when
/// the statement failed for a reason of its own (each then gets its own answer), and an error of
/// the statement's kind for each of its members when the database was not reached
/// (`same_kind`). A member the statement answers None for is written alone too, and so is a
/// batch of one. `shared` counts the members the statement answered. `what` names the members
/// in logs ("claims").
pub async fn write<R, O, Many, Alone>(
    what: &'static str,
    rows: Vec<R>,
    together: &[bool],
    json: impl FnOnce(&[&R]) -> String,
    many: impl FnOnce(String, usize) -> Many,
    alone: impl Fn(R) -> Alone,
    shared: &AtomicU64,
) -> Vec<Result<O, DbErr>>
where
    Many: Future<Output = Result<Vec<Option<O>>, DbErr>>,
    Alone: Future<Output = Result<O, DbErr>>,
{
    let sharing: Vec<&R> = rows
        .iter()
        .zip(together)
        .filter(|(_, t)| **t)
        .map(|(r, _)| r)
        .collect();
    let mut answers: Vec<Option<Result<O, DbErr>>> = match sharing.len() {
        0 | 1 => rows.iter().map(|_| None).collect(),
        n => match many(json(&sharing), n).await {
            Ok(found) => {
                shared.fetch_add(found.iter().flatten().count() as u64, Relaxed);
                let mut found = found.into_iter();
                together
                    .iter()
                    .map(|t| {
                        if *t {
                            found.next().flatten().map(Ok)
                        } else {
                            None
                        }
                    })
                    .collect()
            }
            Err(e) if outage::is_unreachable(&e) => {
                tracing::warn!(error = %e, members = n, what, "a batch met an unreachable database");
                together
                    .iter()
                    .map(|t| t.then(|| Err(same_kind(&e, what))))
                    .collect()
            }
            Err(e) => {
                // A failure of the batch's own (a claim's `GR001`): its writes are undone.
                tracing::info!(error = %e, members = n, what, "a batch was undone; writing each alone");
                rows.iter().map(|_| None).collect()
            }
        },
    };
    let left = rows
        .into_iter()
        .zip(answers.iter())
        .filter(|(_, a)| a.is_none())
        .map(|(row, _)| alone(row));
    let mut written = join_all(left).await.into_iter();
    answers
        .iter_mut()
        .map(|a| match a.take() {
            Some(answer) => answer,
            None => written
                .next()
                .expect("one answer for each member written alone"),
        })
        .collect()
}

/// Which of `rows` may share a statement when one statement cannot write one row twice: the
/// first for each `key`; a later one is written alone, after it.
pub fn first_of_each<R, K: std::hash::Hash + Eq>(rows: &[R], key: impl Fn(&R) -> K) -> Vec<bool> {
    let mut seen = std::collections::HashSet::new();
    rows.iter().map(|r| seen.insert(key(r))).collect()
}

/// The members as one JSON array for a statement's `json_to_recordset`, each given its place in
/// the batch as `"i"`.
pub fn json<R>(rows: &[&R], member: impl Fn(&R) -> serde_json::Value) -> String {
    let members: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut m = member(r);
            if let Some(fields) = m.as_object_mut() {
                fields.insert("i".into(), i.into());
            }
            m
        })
        .collect();
    serde_json::Value::Array(members).to_string()
}

/// Runs a batch's statement `sql` over `members` (`json`'s array of `n`), and reads each row it
/// answers into the place its `"i"` names with `read`; a member it answers nothing for is None
/// (written alone).
pub async fn query<O>(
    db: &DatabaseConnection,
    sql: &str,
    members: String,
    n: usize,
    read: impl Fn(&QueryResult) -> Result<Option<O>, DbErr>,
) -> Result<Vec<Option<O>>, DbErr> {
    let found = db
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            [Value::from(members)],
        ))
        .await?;
    let mut answers: Vec<Option<O>> = (0..n).map(|_| None).collect();
    for row in found {
        let i: i32 = row.try_get("", "i")?;
        let slot = answers
            .get_mut(usize::try_from(i).unwrap_or(usize::MAX))
            .ok_or_else(|| DbErr::Custom(format!("a batch answered for member {i} of {n}")))?;
        *slot = read(&row)?;
    }
    Ok(answers)
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
        assert!(
            b.waited() > Duration::ZERO,
            "ten writes wait behind the first"
        );
        gate.notify_one();
        assert_eq!(first.await.unwrap(), 10);
        for (i, t) in (2..12).zip(rest) {
            // Each gets its own answer, not another's.
            assert_eq!(t.await.unwrap(), i * 10);
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 10]);
        assert_eq!(b.waited(), Duration::ZERO, "nothing waits");
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
