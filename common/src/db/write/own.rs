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
//! An in-memory database has no file to open twice; it keeps borrowing sqlx's connection.

use super::{Done, Lite, lite_err};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};
use std::{
    path::Path,
    sync::{Arc, Mutex, PoisonError, Weak},
    time::Duration,
};

/// How long a transaction waits for another writer, in all (sqlx's busy timeout, `super::super`).
const BUSY_FOR: Duration = Duration::from_secs(10);
/// How often a waiting transaction tries again.
const BUSY_PAUSE: Duration = Duration::from_millis(1);
/// Prepared statements kept: the paid path has about a dozen shapes.
const STATEMENTS: usize = 64;

/// Our connection to one SQLite file.
pub struct Own(Mutex<rusqlite::Connection>);

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
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous}; PRAGMA foreign_keys = {foreign_keys};"
    ))
    .map_err(lite_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    tracing::debug!(file = %file.display(), synchronous, foreign_keys, "own SQLite connection open");
    Ok(Own(Mutex::new(conn)))
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
    Ran(Result<T, DbErr>),
    /// Another writer holds the database: the body, back, to try again.
    Busy(B),
}

/// Runs `body` as one transaction on `own`, waiting its turn behind other writers.
pub(super) async fn run<T, B>(own: Arc<Own>, mut body: B) -> Result<T, DbErr>
where
    B: AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
{
    let started = tokio::time::Instant::now();
    loop {
        body = match attempt(&own, body) {
            Attempt::Ran(done) => return done,
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

fn attempt<T, B>(own: &Own, body: B) -> Attempt<T, B>
where
    B: AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
{
    // A body that panicked left the connection out of its transaction (`Open`'s drop), so a
    // poisoned lock guards nothing broken.
    let conn = own.0.lock().unwrap_or_else(PoisonError::into_inner);
    match conn.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => Attempt::Ran(super::in_transaction(&conn, true, body)),
        Err(e) if is_busy(&e) => Attempt::Busy(body),
        Err(e) => Attempt::Ran(Err(lite_err(e))),
    }
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
        let db = crate::db::connect_with(&url, sync).await.expect("db");
        let own = of(&db)
            .await
            .expect("open")
            .expect("a file has its own connection");
        let found = {
            let conn = own.0.lock().expect("lock");
            let read = |name: &str| {
                conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
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

    #[tokio::test]
    async fn an_in_memory_database_has_no_second_connection() {
        let db = crate::db::connect_url("sqlite::memory:").await.expect("db");
        assert!(of(&db).await.expect("lookup").is_none());
    }
}
