//! One migrator at a time. Every process migrates at start-up (and `migrate` as a release step),
//! so on a fresh database several can start together (`compose up --scale worker=3`, a rollout):
//! two `Migrator::up` at once both see a migration pending and both apply it, and the second fails
//! on a table that now exists. The first to take the lock migrates; the others wait for it, then
//! find nothing pending.
//!
//! - **PostgreSQL**: a session-level advisory lock on a connection of its own, closed afterwards
//!   (closing releases the lock whatever happened; a process that dies mid-migration releases it
//!   with its socket). Its key is a single bigint, so it never shows among the liveness locks
//!   (`grove_common::db::liveness`, two int4 halves).
//! - **SQLite**: an exclusive `flock` on `{database}-migrate.lock` beside the file, which the
//!   kernel drops with the process. An in-memory database belongs to one process: no lock.

use sea_orm_migration::sea_orm::{DatabaseBackend, DatabaseConnection, DbErr, sqlx};
use std::{fs::File, path::PathBuf};

/// The advisory lock's key: "grovmigr" as a bigint.
pub const ADVISORY_KEY: i64 = 0x6772_6f76_6d69_6772;

/// Held while this process migrates; released when dropped.
pub enum MigrationLock {
    Postgres(sqlx::PgConnection),
    File(File),
    None,
}

fn db_err(e: impl std::fmt::Display) -> DbErr {
    DbErr::Custom(format!("migration lock: {e}"))
}

impl MigrationLock {
    /// Waits for the lock on `db`'s database, as long as another process holds it.
    pub async fn take(db: &DatabaseConnection) -> Result<Self, DbErr> {
        match db.get_database_backend() {
            DatabaseBackend::Postgres => postgres(db).await,
            DatabaseBackend::Sqlite => match sqlite_lock_path(db) {
                Some(path) => file(path).await,
                None => Ok(Self::None),
            },
            _ => Ok(Self::None),
        }
    }

    /// Releases the lock (dropping it does too, without waiting for the server's answer).
    pub async fn release(self) {
        if let Self::Postgres(conn) = self {
            use sqlx::Connection;
            let _ = conn.close().await;
        }
    }
}

async fn postgres(db: &DatabaseConnection) -> Result<MigrationLock, DbErr> {
    let mut conn = db
        .get_postgres_connection_pool()
        .acquire()
        .await
        .map_err(db_err)?
        .detach();
    let took: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(ADVISORY_KEY)
        .fetch_one(&mut conn)
        .await
        .map_err(db_err)?;
    if !took {
        tracing::info!("another process is migrating the database; waiting for it");
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(ADVISORY_KEY)
            .execute(&mut conn)
            .await
            .map_err(db_err)?;
    }
    Ok(MigrationLock::Postgres(conn))
}

/// `{file}-migrate.lock` for a SQLite file; None for an in-memory database.
fn sqlite_lock_path(db: &DatabaseConnection) -> Option<PathBuf> {
    let options = db.get_sqlite_connection_pool().connect_options();
    let file = options.get_filename();
    let name = file.to_str()?;
    // sqlx names an in-memory database `file:sqlx-in-memory-N`.
    if name.is_empty() || name.starts_with("file:") || name.starts_with(':') {
        return None;
    }
    Some(PathBuf::from(format!("{name}-migrate.lock")))
}

async fn file(path: PathBuf) -> Result<MigrationLock, DbErr> {
    let locked = tokio::task::spawn_blocking(move || -> std::io::Result<File> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::info!(path = %path.display(), "another process is migrating the database; waiting for it");
                file.lock()?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        Ok(file)
    })
    .await
    .map_err(db_err)?
    .map_err(db_err)?;
    Ok(MigrationLock::File(locked))
}
