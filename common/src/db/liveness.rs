//! Which processes that run jobs are alive, without waiting for a clock.
//!
//! A call's lease names the process that holds it (`calls.lease_process`). Every process that
//! runs jobs (each `worker`, and the api with its embedded worker) claims a key here at start-up
//! and holds a lock on it for as long as it lives; the operating system or the database drops
//! the lock the moment the process dies, so another process can take its calls over at once
//! instead of waiting for a time lease to lapse (which a loaded machine would trip falsely if it
//! were short).
//!
//! - **PostgreSQL**: a session-level advisory lock `(NAMESPACE, key)` on a connection of its own.
//!   A SIGKILL closes the socket and PostgreSQL releases the lock; `pg_locks` lists the keys held.
//!   If that connection drops while the process lives (a restart or failover of the database
//!   drops every connection), its calls look dead to the others: `lost()` resolves, the worker
//!   stops taking jobs, and `reclaim` takes a lock under a NEW key once the database is back (a
//!   new owner: whatever the old key held is the others' to take over, and a run that lost its
//!   call that way cannot store over the run that took it, `calls::Finisher`). The runs still
//!   alive in the process move to the new key (`calls::adopt`). For `RECLAIM_GRACE` after its own
//!   reclaim a process counts every other process alive, so that processes which lost their
//!   lock in the same outage can move their runs before anyone takes them over.
//! - **SQLite** (one machine by nature): an exclusive `flock` on `{database}.owners/{key}`. A lock
//!   that another process can take belongs to a dead process. The api's embedded worker, restarted
//!   after a crash, finds its previous incarnation dead this way and takes its calls over.
//! - **In-memory SQLite**: one process, nothing survives it: only this process is alive.

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, Statement};
use std::{
    collections::HashSet,
    fs::File,
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicI64, Ordering::SeqCst},
    },
    time::Duration,
};
use tokio::{sync::watch, time::Instant};

/// The first half of every advisory lock key Grove takes ("grov"), so that `pg_locks` tells
/// Grove's processes from other users of advisory locks.
pub const NAMESPACE: i32 = 0x6772_6f76;

/// How often the lock's connection is checked.
const PING_EVERY: Duration = Duration::from_secs(1);
/// A ping unanswered for this long counts as a lost connection.
const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// After a reclaim, how long every other process counts as alive: the processes that lost their
/// lock in the same outage reconnect within a second or two of the database coming back (their
/// backoff is capped at one second) and move their runs to their new keys meanwhile.
pub const RECLAIM_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum LivenessError {
    #[error("database: {0}")]
    Db(#[from] DbErr),
    #[error("advisory lock: {0}")]
    Lock(String),
    #[error("owner file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// This process's claim to be alive, and the view of everyone else's.
#[derive(Debug)]
pub struct Liveness {
    /// The key held now (a reclaim changes it).
    key: AtomicI64,
    kind: Kind,
    lost: watch::Sender<bool>,
    /// Stops the PostgreSQL connection's watch when this claim is dropped or replaced.
    stop: Mutex<watch::Sender<bool>>,
    /// When this process last took its lock again after losing it.
    reclaimed_at: Mutex<Option<Instant>>,
}

#[derive(Debug)]
enum Kind {
    Postgres,
    /// `lock` is held (never read) for as long as this process lives.
    Files {
        dir: PathBuf,
        _lock: File,
    },
    Solo,
}

/// The processes alive right now (their keys).
#[derive(Clone, Debug, Default)]
pub struct Alive {
    keys: HashSet<i64>,
    /// Count everyone alive: within `RECLAIM_GRACE` of this process's own reclaim, or while
    /// its own lock is gone (`Liveness::alive`).
    all: bool,
}

impl Alive {
    pub fn contains(&self, key: i64) -> bool {
        self.all || self.keys.contains(&key)
    }

    /// How many processes run jobs (at least one: the one asking).
    pub fn count(&self) -> usize {
        self.keys.len().max(1)
    }
}

impl Liveness {
    /// Claims a key for this process on `db` (`url` locates a SQLite file). Hold the returned
    /// value for the life of the process: dropping it declares the process dead.
    pub async fn claim(db: &DatabaseConnection, url: &str) -> Result<Arc<Self>, LivenessError> {
        let (stop, stopped) = watch::channel(false);
        let (lost, _) = watch::channel(false);
        let (key, kind) = match db.get_database_backend() {
            DatabaseBackend::Postgres => {
                let key = lock_postgres(db, stopped, lost.clone()).await?;
                (key, Kind::Postgres)
            }
            _ => match super::sqlite_file(url) {
                Some(path) => {
                    let dir = PathBuf::from(format!("{path}.owners"));
                    let (key, lock) = lock_file(&dir)?;
                    (key, Kind::Files { dir, _lock: lock })
                }
                None => (random_key(), Kind::Solo),
            },
        };
        tracing::info!(owner = key, "holding this process's liveness lock");
        Ok(Arc::new(Self {
            key: AtomicI64::new(key),
            kind,
            lost,
            stop: Mutex::new(stop),
            reclaimed_at: Mutex::new(None),
        }))
    }

    /// This process's key (what `calls.lease_process` records for its runs).
    pub fn key(&self) -> i64 {
        self.key.load(SeqCst)
    }

    /// Resolves if this process can no longer prove it is alive (its lock's connection dropped):
    /// its calls may be taken over from now on, so it must stop taking jobs until `reclaim`.
    /// Never resolves for a file lock or a single in-memory process.
    pub async fn lost(&self) {
        let mut lost = self.lost.subscribe();
        if lost.wait_for(|l| *l).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Whether the lock is lost right now (and not reclaimed yet).
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Takes a lock under a new key on `db` after the old one was lost, and returns the old key.
    /// The caller moves its live runs to the new key (`calls::adopt`).
    pub async fn reclaim(&self, db: &DatabaseConnection) -> Result<i64, LivenessError> {
        let Kind::Postgres = self.kind else {
            return Ok(self.key());
        };
        let (stop, stopped) = watch::channel(false);
        let key = lock_postgres(db, stopped, self.lost.clone()).await?;
        // The grace before the new key: `alive` that reads the new key must see the grace.
        *self
            .reclaimed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        let old = self.key.swap(key, SeqCst);
        let previous = std::mem::replace(
            &mut *self.stop.lock().unwrap_or_else(PoisonError::into_inner),
            stop,
        );
        let _ = previous.send(true);
        self.lost.send_replace(false);
        tracing::warn!(
            old_owner = old,
            owner = key,
            "took a new liveness lock after losing the old one"
        );
        Ok(old)
    }

    /// Every process alive now, this one included.
    ///
    /// On PostgreSQL, a process whose own lock is not among those held has lost it with
    /// everyone else's (a restart or failover drops every connection), whether or not its
    /// watch has noticed yet: the others have not taken their locks again either, so none of
    /// them can be judged dead until this process holds a lock again and its grace has run.
    /// Without that, a look that began before the outage and was answered after it took the
    /// runs of a process that was about to reclaim and keep them (a second model call).
    pub async fn alive(&self, db: &impl ConnectionTrait) -> Result<Alive, DbErr> {
        let mut keys = HashSet::new();
        match &self.kind {
            Kind::Postgres => {
                let rows = db
                    .query_all_raw(Statement::from_sql_and_values(
                        DatabaseBackend::Postgres,
                        format!("SELECT objid::bigint AS key FROM pg_locks WHERE {HELD}"),
                        [i64::from(NAMESPACE).into()],
                    ))
                    .await?;
                for row in rows {
                    keys.insert(row.try_get::<i64>("", "key")?);
                }
            }
            Kind::Files { dir, .. } => keys.extend(live_files(dir)),
            Kind::Solo => {}
        }
        // Read after the lookup: a reclaim during it both changes the key and starts the grace.
        let mine = self.key();
        let all = (matches!(self.kind, Kind::Postgres) && !keys.contains(&mine))
            || self
                .reclaimed_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some_and(|at| at.elapsed() < RECLAIM_GRACE);
        keys.insert(mine);
        Ok(Alive { keys, all })
    }

    /// Whether the process holding `key` is alive.
    pub async fn is_alive(&self, db: &impl ConnectionTrait, key: i64) -> Result<bool, DbErr> {
        if key == self.key() {
            return Ok(true);
        }
        Ok(self.alive(db).await?.contains(key))
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        // A clean stop: say so at once rather than leave the file for someone to find unlocked.
        if let Kind::Files { dir, .. } = &self.kind {
            let _ = std::fs::remove_file(dir.join(self.key().to_string()));
        }
        let _ = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(true);
    }
}

/// The liveness locks held on this database (`$1`: `NAMESPACE`), for `alive` and `lock_held`.
const HELD: &str = "locktype = 'advisory' AND granted AND objsubid = 2 \
    AND classid = $1::bigint::oid \
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";

/// PostgreSQL: whether the lock of the process holding `key` is held at the moment a statement
/// runs, as a condition for that statement. A takeover decided on a lookup made earlier carries
/// its taker's own lock in its write (`ledger::take_over`): a restart between the two drops that
/// lock, and the write then takes nothing.
pub fn lock_held(key: i64) -> sea_orm::sea_query::SimpleExpr {
    sea_orm::sea_query::Expr::cust_with_values(
        format!("EXISTS (SELECT 1 FROM pg_locks WHERE {HELD} AND objid = $2::bigint::oid)"),
        [i64::from(NAMESPACE), key],
    )
}

fn random_key() -> i64 {
    // Positive and below 2^31: the advisory lock's second half is an int4.
    i64::from(rand::random_range(1..i32::MAX))
}

/// Takes `(NAMESPACE, key)` on a connection taken out of the pool for good, and watches it.
async fn lock_postgres(
    db: &DatabaseConnection,
    mut stopped: watch::Receiver<bool>,
    lost: watch::Sender<bool>,
) -> Result<i64, LivenessError> {
    use sea_orm::sqlx::{self, Connection};
    let fail = |e: sqlx::Error| LivenessError::Lock(e.to_string());
    let mut conn = db
        .get_postgres_connection_pool()
        .acquire()
        .await
        .map_err(fail)?
        .detach();
    let mut key = None;
    // A key another live process holds is refused: draw again (2^31 keys, a handful in use).
    for _ in 0..8 {
        let candidate = random_key();
        let took: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(NAMESPACE)
            .bind(i32::try_from(candidate).unwrap_or(1))
            .fetch_one(&mut conn)
            .await
            .map_err(fail)?;
        if took {
            key = Some(candidate);
            break;
        }
    }
    let key = key.ok_or_else(|| LivenessError::Lock("no free key after 8 draws".into()))?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(PING_EVERY) => {}
                _ = stopped.changed() => {
                    let _ = conn.close().await;
                    return;
                }
            }
            let error = match tokio::time::timeout(PING_TIMEOUT, conn.ping()).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {PING_TIMEOUT:?}"),
            };
            tracing::error!(%error, owner = key, "lost the connection holding this process's liveness lock");
            lost.send_replace(true);
            return;
        }
    });
    Ok(key)
}

/// Creates and locks `{dir}/{key}` for a fresh key.
fn lock_file(dir: &PathBuf) -> Result<(i64, File), LivenessError> {
    let io = |path: PathBuf| move |source| LivenessError::File { path, source };
    std::fs::create_dir_all(dir).map_err(io(dir.clone()))?;
    loop {
        let key = i64::try_from(rand::random::<u64>() >> 1).unwrap_or(1);
        let path = dir.join(key.to_string());
        let file = match File::options().write(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(path)(e)),
        };
        file.try_lock().map_err(|e| LivenessError::File {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        return Ok((key, file));
    }
}

/// The keys in `dir` whose lock is held. A file whose lock can be taken belongs to a dead
/// process: it is removed on the way.
fn live_files(dir: &PathBuf) -> Vec<i64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut live = vec![];
    for entry in entries.flatten() {
        let Some(key) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        let file = match File::open(entry.path()) {
            Ok(file) => file,
            // Removed meanwhile: its process is gone (or stopped cleanly).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // Cannot tell: count it alive (the time lease still ends a dead one's hold).
            Err(_) => {
                live.push(key);
                continue;
            }
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = std::fs::remove_file(entry.path());
            }
            Err(std::fs::TryLockError::WouldBlock) => live.push(key),
            // Cannot tell: count it alive (the time lease still ends a dead one's hold).
            Err(std::fs::TryLockError::Error(_)) => live.push(key),
        }
    }
    live
}
