//! Database access: connecting (SQLite by default, PostgreSQL through `DATABASE_URL`) and the
//! entities. Migrations live in the `migrations` crate and run before anything else touches it.

pub mod batch;
pub mod calls;
pub mod entities;
pub mod liveness;
pub mod outage;
pub mod payments;
pub mod phone_marks;
pub mod reviews;
pub mod webhook_receipts;
pub mod write;

use crate::config::{Config, DEFAULT_DATABASE_POOL, SqliteSync};
use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbErr};
use std::time::Duration;

/// The embedded default when `DATABASE_URL` is unset.
pub const DEFAULT_SQLITE_URL: &str = "sqlite://data/grove.db?mode=rwc";

/// The URL in use, with the embedded default filled in.
pub fn url(config: &Config) -> String {
    config
        .database_url
        .as_ref()
        .map(|s| s.expose().to_owned())
        .unwrap_or_else(|| DEFAULT_SQLITE_URL.to_owned())
}

pub async fn connect(config: &Config) -> Result<DatabaseConnection, DbErr> {
    connect_with(&url(config), config.sqlite_sync, config.database_pool).await
}

pub async fn connect_url(url: &str) -> Result<DatabaseConnection, DbErr> {
    connect_with(url, SqliteSync::default(), DEFAULT_DATABASE_POOL).await
}

/// Connects to `url`: a SQLite database commits at the `sync` level, a PostgreSQL one keeps up
/// to `pool` connections.
pub async fn connect_with(
    url: &str,
    sync: SqliteSync,
    pool: u32,
) -> Result<DatabaseConnection, DbErr> {
    let sqlite = url.starts_with("sqlite:");
    if sqlite {
        ensure_sqlite_dir(url);
    }
    // SQLite gets one connection: every connection to `sqlite::memory:` is its own empty
    // database, and a file has one writer anyway. With more, each commit empties the other
    // connections' page caches and writers queue in SQLite's busy handler: one connection cut
    // the paid call's server CPU by a third (5,873 → 3,906 µs beside 8 connections, and 5,051
    // with 2; issue 12, `grove.sh`). Single statements run on sqlx's thread for the connection;
    // write transactions on a file run on a connection of their own (`write::own`), the only
    // other one, so that the paid path's writes all stay on one connection and its page cache.
    // PostgreSQL gets `pool` (`DATABASE_POOL_SIZE`, sized in `config::DEFAULT_DATABASE_POOL`).
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(if sqlite { 1 } else { pool })
        .min_connections(1)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10))
        .sqlx_logging(false);
    // sqlx pings a connection on every checkout by default: one more round trip per statement
    // (to PostgreSQL, or to SQLite's connection thread), a quarter of the embedded paid call's
    // thread hand-offs (issue 12). A SQLite file cannot hang up; a PostgreSQL connection is
    // pinged only after sitting idle, when a restart or a proxy may have dropped it.
    if sqlite {
        options.test_before_acquire(false);
    } else {
        options.test_before_acquire_if_idle_for(Duration::from_secs(10));
    }
    if !sqlite {
        options.map_sqlx_postgres_opts(plain_on_loopback);
    }
    if sqlite {
        // WAL lets readers run beside the writer; busy_timeout makes concurrent writers wait
        // their turn instead of failing with "database is locked".
        use sea_orm::sqlx::sqlite::SqliteSynchronous;
        let synchronous = match sync {
            SqliteSync::Normal => SqliteSynchronous::Normal,
            SqliteSync::Full => SqliteSynchronous::Full,
        };
        options.map_sqlx_sqlite_opts(move |o| {
            o.journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(synchronous)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
        });
        return open_sqlite(options).await;
    }
    Database::connect(options).await
}

/// How long a SQLite connection waits for another writer before "database is locked".
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a SQLite file, trying again while another connection holds it. Switching a file to
/// WAL needs it to itself, and SQLite answers "database is locked" at once instead of waiting
/// in the busy handler (two switches could wait on each other forever): processes that start
/// together on a new file (`compose up --scale worker=3`) meet exactly there. A busy open did
/// not happen, so it is tried again, for as long as a busy statement would wait.
async fn open_sqlite(options: ConnectOptions) -> Result<DatabaseConnection, DbErr> {
    use backon::Retryable;
    let waits = backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(10))
        .with_max_delay(Duration::from_millis(500))
        .with_total_delay(Some(SQLITE_BUSY_TIMEOUT))
        .with_jitter()
        .without_max_times();
    (|| Database::connect(options.clone()))
        .retry(waits)
        .when(sqlite_busy)
        .notify(|e, wait| tracing::debug!(error = %e, ?wait, "sqlite file busy while opening"))
        .await
}

/// SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
fn sqlite_busy(e: &DbErr) -> bool {
    let (DbErr::Conn(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))) = e
    else {
        return false;
    };
    let sea_orm::sqlx::Error::Database(e) = &**e else {
        return false;
    };
    e.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

/// A PostgreSQL server on this host's loopback, with `sslmode` left at `prefer` (the default:
/// TLS if the server offers it, plain if not), is reached without TLS. Encryption on loopback
/// protects nothing, and it was 30 % of both PostgreSQL's CPU and ours in `--bin paid`'s replays
/// (issue 12: `SSL_read`/`SSL_write` in the server, rustls in sqlx, on every message). An
/// `sslmode` of `require` or `verify-*`, and any other host, are left as they are.
pub fn plain_on_loopback(
    options: sea_orm::sqlx::postgres::PgConnectOptions,
) -> sea_orm::sqlx::postgres::PgConnectOptions {
    use sea_orm::sqlx::postgres::PgSslMode;
    let host = options.get_host();
    let loopback = host == "localhost"
        || host.starts_with('/')
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback && matches!(options.get_ssl_mode(), PgSslMode::Prefer) {
        options.ssl_mode(PgSslMode::Disable)
    } else {
        options
    }
}

/// The file a SQLite URL names; None for an in-memory database (or another backend's URL).
pub fn sqlite_file(url: &str) -> Option<&str> {
    if !url.starts_with("sqlite:") {
        return None;
    }
    let path = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default();
    (!path.is_empty() && !path.starts_with(':')).then_some(path)
}

/// `sqlite://data/grove.db` needs `data/` to exist.
fn ensure_sqlite_dir(url: &str) {
    let Some(path) = sqlite_file(url) else {
        return;
    };
    if let Some(dir) = std::path::Path::new(path).parent()
        && !dir.as_os_str().is_empty()
    {
        let _ = std::fs::create_dir_all(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::plain_on_loopback;
    use sea_orm::sqlx::postgres::{PgConnectOptions, PgSslMode};

    fn mode(url: &str) -> PgSslMode {
        plain_on_loopback(url.parse::<PgConnectOptions>().expect("url")).get_ssl_mode()
    }

    #[test]
    fn loopback_without_a_stated_mode_goes_plain_and_everything_else_is_kept() {
        use PgSslMode::{Disable, Prefer, Require, VerifyFull};
        for (url, want) in [
            ("postgres://u@127.0.0.1:5432/db", Disable),
            ("postgres://u@localhost/db", Disable),
            ("postgres://u@[::1]:5432/db", Disable),
            ("postgres://u@127.0.0.1/db?sslmode=prefer", Disable),
            ("postgres:///db?host=/var/run/postgresql", Disable),
            ("postgres://u@127.0.0.1/db?sslmode=require", Require),
            ("postgres://u@localhost/db?sslmode=verify-full", VerifyFull),
            ("postgres://u@db.example.com/db", Prefer),
            ("postgres://u@10.0.0.5/db", Prefer),
        ] {
            let got = mode(url);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{url}");
        }
    }
}

#[cfg(test)]
mod opening_together {
    use crate::config::SqliteSync;
    use std::time::Duration;

    /// Another process writing to a new SQLite file (in rollback-journal mode, as it is until
    /// someone switches it, here itself switching it) while we open it: our switch to WAL needs
    /// the file to itself, and SQLite refuses it at once ("database is locked") rather than wait
    /// in its busy handler, where two such switches could wait on each other forever. We wait.
    #[tokio::test]
    async fn opening_waits_for_a_writer_of_a_new_file_instead_of_failing() {
        let dir = std::env::temp_dir().join(format!("grove-open-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("new.db");
        let reader = rusqlite::Connection::open(&file).expect("open");
        reader
            .execute_batch("CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .expect("a write transaction holds the file");
        let url = format!("sqlite://{}?mode=rwc", file.display());
        let opening =
            tokio::spawn(async move { super::connect_with(&url, SqliteSync::Normal, 1).await });
        // The other process writes for a moment, then is done.
        tokio::time::sleep(Duration::from_millis(300)).await;
        reader.execute_batch("COMMIT").expect("commit");
        let db = opening
            .await
            .expect("task")
            .expect("connected once the writer was done");
        use sea_orm::ConnectionTrait;
        let mode = db
            .query_one_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                "PRAGMA journal_mode",
            ))
            .await
            .expect("pragma")
            .expect("a row")
            .try_get_by_index::<String>(0)
            .expect("mode");
        assert_eq!(mode, "wal");
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }
}
