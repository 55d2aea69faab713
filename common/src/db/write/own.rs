//! The write transactions' own connection to a SQLite file.
//!
//! Borrowing sqlx's connection (`super::lite`) still costs a hand-off to its thread per
//! transaction (the connection's lock is handed over there and back), and the statements could
//! not stay prepared: sqlx closes its handle with a panic if any statement of ours is still
//! open. So a SQLite *file* gets a second connection, ours, opened beside sqlx's pool with the
//! same file and the same settings (synchronous level, foreign keys; WAL is the file's own).
//! Transactions run on it on the caller's thread, with their statements prepared once and kept
//! (`prepare_cached`). The paid call's transactions took four hand-offs and twelve statement
//! compilations; they now take none (issue 12).
//!
//! Two connections on one file are two writers, so who waits matters. Ours never waits inside
//! SQLite (busy timeout 0): when sqlx's connection, or another process, holds the write lock,
//! `BEGIN IMMEDIATE` reports busy at once and the transaction waits its turn asynchronously
//! (`BUSY_PAUSE` up to `BUSY_FOR`, the same 10 s sqlx's connection waits). Blocking here would
//! be a deadlock waiting to happen: the runtime thread that blocks may be the one that must
//! run the sqlx transaction holding the lock to its COMMIT. Reads never wait in WAL mode.
//!
//! Transactions that run while another is open share its COMMIT (`group`).
//!
//! An in-memory database has no file to open twice; it keeps borrowing sqlx's connection.

use super::{
    Done, Lite,
    group::{Batch, Savepoint},
    lite_err,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};
use std::{
    path::Path,
    sync::{
        Arc, Mutex, PoisonError, Weak,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};

/// How long a transaction waits for another writer, in all (sqlx's busy timeout, `super::super`).
const BUSY_FOR: Duration = Duration::from_secs(10);
/// How often a waiting transaction tries again.
const BUSY_PAUSE: Duration = Duration::from_millis(1);
/// How many times a batch's committer lets others run before it commits, at most.
const MAX_YIELDS: usize = 8;
/// The connection's page cache, KiB.
const CACHE_KIB: u32 = 32 * 1024;
/// Prepared statements kept: the paid path has about a dozen shapes.
const STATEMENTS: usize = 64;

/// Our connection to one SQLite file, and how many batches it has committed.
pub struct Own(Mutex<Held>, AtomicU64);

/// The connection, and the batch it has open (`group`), if any.
struct Held {
    conn: rusqlite::Connection,
    open: Option<Arc<Batch>>,
}

type Options = sea_orm::sqlx::sqlite::SqliteConnectOptions;

/// A pool (by its options, which it holds for its life) and its connection: `None` for an
/// in-memory database.
type Entry = (Weak<Options>, Option<Arc<Own>>);

/// Every live pool's entry. An entry goes when its pool does.
static OWNED: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// `db`'s own connection (made on first use), or `None` when it has no file to open again.
pub(super) async fn of(db: &DatabaseConnection) -> Result<Option<Arc<Own>>, DbErr> {
    let options = db.get_sqlite_connection_pool().connect_options();
    if let Some(found) = lookup(&options) {
        return Ok(found);
    }
    let file = options.get_filename();
    let own = if on_disk(file) {
        Some(Arc::new(open(db, file).await?))
    } else {
        None
    };
    let mut owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    // Another task may have opened one meanwhile: the first stays.
    if let Some((_, found)) = owned.iter().find(|(o, _)| same(o, &options)) {
        return Ok(found.clone());
    }
    owned.push((Arc::downgrade(&options), own.clone()));
    Ok(own)
}

fn lookup(options: &Arc<Options>) -> Option<Option<Arc<Own>>> {
    let mut owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    owned.retain(|(o, _)| o.strong_count() > 0);
    owned
        .iter()
        .find(|(o, _)| same(o, options))
        .map(|(_, own)| own.clone())
}

fn same(held: &Weak<Options>, options: &Arc<Options>) -> bool {
    std::ptr::eq(held.as_ptr(), Arc::as_ptr(options))
}

/// sqlx names an in-memory database `file:sqlx-in-memory-…` (or `:memory:`); a file is a path.
fn on_disk(file: &Path) -> bool {
    let name = file.to_string_lossy();
    !name.is_empty() && !name.starts_with(':') && !name.starts_with("file:")
}

/// Opens `file` with the settings of sqlx's connection to it, read from that connection.
async fn open(db: &DatabaseConnection, file: &Path) -> Result<Own, DbErr> {
    let synchronous = pragma(db, "synchronous").await?;
    let foreign_keys = pragma(db, "foreign_keys").await?;
    let conn = rusqlite::Connection::open(file).map_err(lite_err)?;
    conn.busy_timeout(Duration::ZERO).map_err(lite_err)?;
    // A batch's members run in savepoints (`group`), and a savepoint keeps each page's first
    // version in a sub-journal, a temporary file by default: written to disk for every page a
    // member changes. In memory it costs a copy (temp_store). The page cache holds a whole
    // batch's changed pages, so none is spilled to the log before the COMMIT (cache_size).
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous}; PRAGMA foreign_keys = {foreign_keys}; \
         PRAGMA temp_store = MEMORY; PRAGMA cache_size = -{CACHE_KIB};"
    ))
    .map_err(lite_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    tracing::debug!(file = %file.display(), synchronous, foreign_keys, "own SQLite connection open");
    Ok(Own(
        Mutex::new(Held { conn, open: None }),
        AtomicU64::new(0),
    ))
}

async fn pragma(db: &DatabaseConnection, name: &str) -> Result<i64, DbErr> {
    let sql = format!("PRAGMA {name}");
    let row = db
        .query_one_raw(Statement::from_string(DbBackend::Sqlite, sql))
        .await?
        .ok_or_else(|| DbErr::Custom(format!("PRAGMA {name} answered nothing")))?;
    row.try_get_by_index(0)
}

/// What one try at a transaction did.
enum Attempt<T, B> {
    /// The body ran in a batch: its outcome holds once the batch commits.
    Ran(Arc<Batch>, Result<T, DbErr>),
    /// It could not begin.
    Failed(DbErr),
    /// Another writer holds the database: the body, back, to try again.
    Busy(B),
}

/// Runs `body` as one transaction on `own`, waiting its turn behind other writers, and
/// returns once its writes are committed (`group`).
pub(super) async fn run<T, B>(own: Arc<Own>, mut body: B) -> Result<T, DbErr>
where
    B: AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
{
    let started = tokio::time::Instant::now();
    loop {
        body = match attempt(&own, body) {
            Attempt::Ran(batch, done) => {
                batch.committed().await?;
                return done;
            }
            Attempt::Failed(e) => return Err(e),
            Attempt::Busy(body) => body,
        };
        if started.elapsed() >= BUSY_FOR {
            return Err(DbErr::Custom(
                "sqlite: database is locked (another writer held it for 10 s)".into(),
            ));
        }
        tokio::time::sleep(BUSY_PAUSE).await;
    }
}

fn attempt<T, B>(own: &Arc<Own>, body: B) -> Attempt<T, B>
where
    B: AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
{
    // A body that panicked left its savepoint rolled back (`Savepoint`'s drop), so a poisoned
    // lock guards nothing broken.
    let mut held = own.0.lock().unwrap_or_else(PoisonError::into_inner);
    let batch = match &held.open {
        Some(batch) => {
            batch.join();
            Arc::clone(batch)
        }
        None => match held.conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => {
                let batch = Batch::new();
                held.open = Some(Arc::clone(&batch));
                tokio::spawn(commit(Arc::clone(own), Arc::clone(&batch)));
                batch
            }
            Err(e) if is_busy(&e) => return Attempt::Busy(body),
            Err(e) => return Attempt::Failed(lite_err(e)),
        },
    };
    let done = Savepoint::begin(&held.conn)
        .and_then(|member| super::in_transaction(&held.conn, true, member, body));
    Attempt::Ran(batch, done)
}

/// The batch's committer: it lets the tasks that are ready run (and join the batch) first.
/// A task of its own, so that no member's cancellation can leave the batch open.
async fn commit(own: Arc<Own>, batch: Arc<Batch>) {
    // While members keep joining, let them: a bigger batch writes its hot pages fewer times.
    for _ in 0..MAX_YIELDS {
        let members = batch.members();
        tokio::task::yield_now().await;
        if batch.members() == members {
            break;
        }
    }
    let mut held = own.0.lock().unwrap_or_else(PoisonError::into_inner);
    held.open = None;
    batch.commit(&held.conn);
    own.1.fetch_add(1, Relaxed);
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SqliteSync;

    async fn settings(sync: SqliteSync) -> (i64, i64) {
        let dir = std::env::temp_dir().join(format!("grove-own-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let url = format!("sqlite://{}/t.db?mode=rwc", dir.display());
        let db = crate::db::connect_with(&url, sync, 1).await.expect("db");
        let own = of(&db)
            .await
            .expect("open")
            .expect("a file has its own connection");
        let found = {
            let held = own.0.lock().expect("lock");
            let read = |name: &str| {
                held.conn
                    .query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
                    .expect("pragma")
            };
            (read("synchronous"), read("foreign_keys"))
        };
        db.close().await.expect("close");
        let _ = std::fs::remove_dir_all(dir);
        found
    }

    /// The write transactions commit as durably as the configuration says: the synchronous
    /// level (1 NORMAL, 2 FULL) and foreign keys are sqlx's connection's.
    #[tokio::test]
    async fn our_connection_commits_at_the_configured_synchronous_level() {
        assert_eq!(settings(SqliteSync::Normal).await, (1, 1));
        assert_eq!(settings(SqliteSync::Full).await, (2, 1));
    }

    /// Transactions that run together share one COMMIT (`group`); each still keeps or undoes
    /// only its own writes, and is committed when it returns.
    #[tokio::test]
    async fn transactions_that_run_together_share_a_commit() {
        let dir = std::env::temp_dir().join(format!("grove-own-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let url = format!("sqlite://{}/t.db?mode=rwc", dir.display());
        let db = crate::db::connect_url(&url).await.expect("db");
        db.execute_unprepared("CREATE TABLE t (k INTEGER PRIMARY KEY)")
            .await
            .expect("table");
        let own = of(&db).await.expect("open").expect("a file");
        let insert = |k: i64| {
            Statement::from_string(DbBackend::Sqlite, format!("INSERT INTO t VALUES ({k})"))
        };
        let file = dir.join("t.db");
        let members = (0..16).map(|k| {
            let (own, file, stmt) = (Arc::clone(&own), file.clone(), insert(k));
            async move {
                let kept = run(own, async move |e: &Lite<'_>| {
                    e.run(stmt).map_err(lite_err)?;
                    Ok(if k % 2 == 0 {
                        Done::Commit(true)
                    } else {
                        Done::Rollback(false)
                    })
                })
                .await
                .expect("transaction");
                // Committed when it returns: another connection sees it at once, before
                // anything else runs (no await between the two).
                let reader = rusqlite::Connection::open(&file).expect("reader");
                let seen: i64 = reader
                    .query_row(&format!("SELECT count(*) FROM t WHERE k = {k}"), [], |r| {
                        r.get(0)
                    })
                    .expect("count");
                (kept, seen)
            }
        });
        for (kept, seen) in futures::future::join_all(members).await {
            assert_eq!(seen, i64::from(kept));
        }
        let commits = own.1.load(Relaxed);
        assert!(
            commits < 16,
            "16 transactions that ran together took {commits} commits"
        );
        db.close().await.expect("close");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn an_in_memory_database_has_no_second_connection() {
        let db = crate::db::connect_url("sqlite::memory:").await.expect("db");
        assert!(of(&db).await.expect("lookup").is_none());
    }
}
