//! Write transactions run in one piece.
//!
//! On SQLite, sqlx runs every statement on its connection's own thread: each statement, BEGIN
//! and COMMIT included, is a message there and a reply back (two thread wake-ups), and the
//! process's one connection (`super::connect_with`) stays held across all of them. The paid
//! call's write transactions took a dozen such round trips; the hand-offs were a quarter of the
//! process's CPU and, with one connection, what capped throughput (issue 12).
//!
//! Here a SQLite transaction runs all its statements on the caller's thread through rusqlite:
//! on a SQLite file, on our own connection beside sqlx's, with the same settings and its
//! statements kept prepared (`own`); on an in-memory database, on sqlx's own handle, whose lock
//! it takes once (sqlx's `lock_handle`: one hand-off). Either way the synchronous level and WAL
//! are sqlx's, so durability is what it was. The statements are still sea-orm's, built for
//! SQLite and bound exactly as sqlx binds them (`bind`), so what is written here reads back
//! through sea-orm like any other row. Other databases run the same transaction bodies on a
//! sea-orm transaction.
//!
//! A body is an async function generic over [`Exec`]; [`transaction!`](crate::transaction)
//! runs it on whichever the connection is. A body writes and counts rows; it does not read
//! rows back (rusqlite cannot decode sea-orm's models), so callers build what they return from
//! what they wrote, and read afterwards in the rare case they need the database's copy.

mod group;
mod own;
mod row;

use crate::db::entities::call;
use futures::FutureExt;
use sea_orm::{
    DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, QueryTrait, RuntimeErr, SqlErr,
    Statement, TransactionTrait, UpdateMany,
    sea_query::Query,
    sqlx::{Sqlite, pool::PoolConnection},
};
use std::{future::Future, sync::Arc};

/// What a transaction body decided: keep its writes, or undo them; either way it answers `T`.
#[derive(Debug)]
pub enum Done<T> {
    Commit(T),
    Rollback(T),
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// The rows it wrote (0 when an `ON CONFLICT` clause kept the existing row).
    Rows(u64),
    /// A unique key (primary or not) already held the row.
    Duplicate,
}

/// Where a transaction body's statements run.
pub trait Exec {
    /// Runs one insert, update or delete; the rows it changed.
    fn exec(&self, query: &impl QueryTrait) -> impl Future<Output = Result<u64, DbErr>> + Send;

    /// Runs one insert, telling a unique key's refusal apart from other errors. PostgreSQL
    /// aborts the transaction there: a body that meets `Duplicate` rolls back.
    fn insert(
        &self,
        query: &impl QueryTrait,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send;

    /// [`insert`](Exec::insert) of a statement written by hand for this connection's backend
    /// (the paid path's hottest inserts skip building by sea-query; issue 12).
    fn insert_statement(
        &self,
        stmt: Statement,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send;

    /// Runs an update of calls and reads back the rows it changed (`RETURNING`).
    fn update_calls(
        &self,
        update: UpdateMany<call::Entity>,
    ) -> impl Future<Output = Result<Vec<call::Model>, DbErr>> + Send;
}

/// One update of calls, read back: on SQLite where the write transactions run (no hand-off to
/// sqlx's thread, and the page cache stays our connection's); elsewhere one statement on the
/// connection (a transaction around it would only add round trips).
pub async fn update_calls(
    db: &DatabaseConnection,
    update: UpdateMany<call::Entity>,
) -> Result<Vec<call::Model>, DbErr> {
    if db.get_database_backend() == DbBackend::Sqlite {
        crate::transaction!(db, async move |e| Ok(Done::Commit(
            e.update_calls(update).await?
        )))
    } else {
        update.exec_with_returning(db).await
    }
}

/// A transaction's connection, as `begin` found it.
pub enum Begun {
    /// A SQLite file: our own connection to it (`own`).
    Own(Arc<own::Own>),
    /// In-memory SQLite: sqlx's connection itself; the transaction runs under its lock (`lite`).
    Lite(PoolConnection<Sqlite>),
    /// Anything else: a sea-orm transaction (`sea`).
    Sea(DatabaseTransaction),
}

pub async fn begin(db: &DatabaseConnection) -> Result<Begun, DbErr> {
    if db.get_database_backend() == DbBackend::Sqlite {
        if let Some(own) = own::of(db).await? {
            return Ok(Begun::Own(own));
        }
        let conn = db
            .get_sqlite_connection_pool()
            .acquire()
            .await
            .map_err(|e| match e {
                sea_orm::sqlx::Error::PoolTimedOut => {
                    DbErr::ConnectionAcquire(sea_orm::error::ConnAcquireErr::Timeout)
                }
                e => DbErr::Conn(RuntimeErr::SqlxError(e.into())),
            })?;
        Ok(Begun::Lite(conn))
    } else {
        Ok(Begun::Sea(db.begin().await?))
    }
}

/// Runs `body` as one write transaction on `db`: `body` is an `async move |e| …` whose `e` is an
/// [`Exec`], written once and compiled for both kinds of connection. Evaluates to
/// `Result<T, DbErr>` where the body answers `Result<Done<T>, DbErr>`; an error rolls back.
#[macro_export]
macro_rules! transaction {
    ($db:expr, async move |$e:ident| $body:expr) => {
        match $crate::db::write::begin($db).await {
            Err(e) => Err(e),
            Ok($crate::db::write::Begun::Own(own)) => {
                $crate::db::write::own(own, async move |$e| $body).await
            }
            Ok($crate::db::write::Begun::Lite(conn)) => {
                $crate::db::write::lite(conn, async move |$e| $body).await
            }
            Ok($crate::db::write::Begun::Sea(txn)) => {
                $crate::db::write::sea(txn, async move |$e| $body).await
            }
        }
    };
}

/// Runs `body` in a sea-orm transaction.
pub async fn sea<T>(
    txn: DatabaseTransaction,
    body: impl AsyncFnOnce(&Sea<'_>) -> Result<Done<T>, DbErr>,
) -> Result<T, DbErr> {
    let done = body(&Sea(&txn)).await;
    match done {
        Ok(Done::Commit(t)) => {
            txn.commit().await?;
            Ok(t)
        }
        Ok(Done::Rollback(t)) => {
            txn.rollback().await?;
            Ok(t)
        }
        Err(e) => {
            // Dropping an open sea-orm transaction rolls it back; an explicit rollback reports
            // a connection that is gone, which the body's error already says.
            let _ = txn.rollback().await;
            Err(e)
        }
    }
}

/// A sea-orm transaction as an [`Exec`].
pub struct Sea<'t>(&'t DatabaseTransaction);

impl Exec for Sea<'_> {
    fn exec(&self, query: &impl QueryTrait) -> impl Future<Output = Result<u64, DbErr>> + Send {
        use sea_orm::ConnectionTrait;
        let stmt = query.build(self.0.get_database_backend());
        async move { Ok(self.0.execute_raw(stmt).await?.rows_affected()) }
    }

    fn insert(
        &self,
        query: &impl QueryTrait,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send {
        use sea_orm::ConnectionTrait;
        self.insert_statement(query.build(self.0.get_database_backend()))
    }

    fn insert_statement(
        &self,
        stmt: Statement,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send {
        use sea_orm::ConnectionTrait;
        async move {
            match self.0.execute_raw(stmt).await.map(|r| r.rows_affected()) {
                Ok(rows) => Ok(Inserted::Rows(rows)),
                Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                    Ok(Inserted::Duplicate)
                }
                Err(e) => Err(e),
            }
        }
    }

    fn update_calls(
        &self,
        update: UpdateMany<call::Entity>,
    ) -> impl Future<Output = Result<Vec<call::Model>, DbErr>> + Send {
        update.exec_with_returning(self.0)
    }
}

/// Runs `body` as one transaction on our own connection to a SQLite file, on this thread.
pub async fn own<T>(
    own: Arc<own::Own>,
    body: impl AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
) -> Result<T, DbErr> {
    own::run(own, body).await
}

/// Runs `body` as one transaction on the locked SQLite connection, on this thread.
pub async fn lite<T>(
    mut conn: PoolConnection<Sqlite>,
    body: impl AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
) -> Result<T, DbErr> {
    let mut locked = conn
        .lock_handle()
        .await
        .map_err(|e| DbErr::Conn(RuntimeErr::SqlxError(e.into())))?;
    lock::with_connection(&mut locked, |c| {
        // IMMEDIATE: the write lock is taken now, so a writer in another process makes this one
        // wait (busy timeout) here rather than fail on its first write.
        c.execute_batch("BEGIN IMMEDIATE").map_err(lite_err)?;
        // Statements are not kept on sqlx's handle: it must close with none open.
        in_transaction(c, false, lock::Open(c), body)
    })
}

/// Runs `body` in the transaction (or savepoint) `open` holds on `c`, and keeps or undoes its
/// writes as it decides. Nothing here waits: the statements run in place, and a body's futures
/// are ready when made.
fn in_transaction<T>(
    c: &rusqlite::Connection,
    keep_statements: bool,
    open: impl lock::Undo,
    body: impl AsyncFnOnce(&Lite<'_>) -> Result<Done<T>, DbErr>,
) -> Result<T, DbErr> {
    let lite = Lite {
        conn: c,
        keep_statements,
    };
    let done = body(&lite).now_or_never().unwrap_or_else(|| {
        Err(DbErr::Custom(
            "a SQLite transaction body waited on something other than its statements".into(),
        ))
    });
    match done {
        Ok(Done::Commit(t)) => {
            open.keep()?;
            Ok(t)
        }
        Ok(Done::Rollback(t)) => {
            drop(open);
            Ok(t)
        }
        Err(e) => {
            drop(open);
            Err(e)
        }
    }
}

/// A SQLite connection in a transaction, as an [`Exec`]: each statement runs when it is made, so the
/// futures it returns are ready.
pub struct Lite<'c> {
    conn: &'c rusqlite::Connection,
    /// Prepared statements stay for the next transaction (our own connection only).
    keep_statements: bool,
}

impl Lite<'_> {
    /// Prepares `stmt` (or finds it kept), binds its values and hands it to `f`.
    fn with_statement<T>(
        &self,
        stmt: Statement,
        f: impl FnOnce(&mut rusqlite::Statement<'_>) -> Result<T, rusqlite::Error>,
    ) -> Result<T, rusqlite::Error> {
        let bound = |prepared: &mut rusqlite::Statement<'_>| {
            if let Some(values) = &stmt.values {
                for (i, value) in values.0.iter().enumerate() {
                    prepared.raw_bind_parameter(i + 1, bind(value)?)?;
                }
            }
            f(prepared)
        };
        if self.keep_statements {
            bound(&mut *self.conn.prepare_cached(&stmt.sql)?)
        } else {
            bound(&mut self.conn.prepare(&stmt.sql)?)
        }
    }

    fn run(&self, stmt: Statement) -> Result<u64, rusqlite::Error> {
        self.with_statement(stmt, |s| Ok(s.raw_execute()? as u64))
    }

    fn calls_returning(
        &self,
        update: UpdateMany<call::Entity>,
    ) -> Result<Vec<call::Model>, rusqlite::Error> {
        let mut query = update.into_query();
        query.returning(Query::returning().columns(row::call_columns()));
        self.with_statement(DbBackend::Sqlite.build(&query), |s| {
            let mut rows = s.raw_query();
            let mut calls = Vec::new();
            while let Some(r) = rows.next()? {
                calls.push(row::call(r)?);
            }
            Ok(calls)
        })
    }
}

impl Exec for Lite<'_> {
    fn exec(&self, query: &impl QueryTrait) -> impl Future<Output = Result<u64, DbErr>> + Send {
        std::future::ready(self.run(query.build(DbBackend::Sqlite)).map_err(lite_err))
    }

    fn insert(
        &self,
        query: &impl QueryTrait,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send {
        self.insert_statement(query.build(DbBackend::Sqlite))
    }

    fn insert_statement(
        &self,
        stmt: Statement,
    ) -> impl Future<Output = Result<Inserted, DbErr>> + Send {
        let inserted = match self.run(stmt) {
            Ok(rows) => Ok(Inserted::Rows(rows)),
            Err(e) if is_unique_violation(&e) => Ok(Inserted::Duplicate),
            Err(e) => Err(lite_err(e)),
        };
        std::future::ready(inserted)
    }

    fn update_calls(
        &self,
        update: UpdateMany<call::Entity>,
    ) -> impl Future<Output = Result<Vec<call::Model>, DbErr>> + Send {
        std::future::ready(self.calls_returning(update).map_err(lite_err))
    }
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    use rusqlite::ffi;
    matches!(
        e.sqlite_error().map(|e| e.extended_code),
        Some(ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
    )
}

fn lite_err(e: rusqlite::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::Internal(format!("sqlite: {e}")))
}

/// A sea-query value as sqlx binds it for SQLite (`sea-query-sqlx`, then sqlx-sqlite's
/// encoders), so that rows written here and through sea-orm are stored alike: a UUID as its 16
/// bytes, a time as RFC 3339 text with the digits it needs, JSON as text, a bool as 0 or 1.
fn bind(value: &sea_orm::Value) -> Result<rusqlite::types::Value, rusqlite::Error> {
    use chrono::SecondsFormat::AutoSi;
    use rusqlite::types::Value as V;
    use sea_orm::Value;
    let int = |i: Option<i64>| i.map_or(V::Null, V::Integer);
    Ok(match value {
        Value::Bool(b) => int(b.map(i64::from)),
        Value::TinyInt(i) => int(i.map(i64::from)),
        Value::SmallInt(i) => int(i.map(i64::from)),
        Value::Int(i) => int(i.map(i64::from)),
        Value::BigInt(i) => int(*i),
        Value::TinyUnsigned(i) => int(i.map(i64::from)),
        Value::SmallUnsigned(i) => int(i.map(i64::from)),
        Value::Unsigned(i) => int(i.map(i64::from)),
        Value::BigUnsigned(i) => match i {
            Some(i) => V::Integer(i64::try_from(*i).map_err(|_| unsupported("a u64 over i64"))?),
            None => V::Null,
        },
        Value::Float(f) => f.map_or(V::Null, |f| V::Real(f64::from(f))),
        Value::Double(f) => f.map_or(V::Null, V::Real),
        Value::String(s) => s.clone().map_or(V::Null, V::Text),
        Value::Char(c) => c.map_or(V::Null, |c| V::Text(c.to_string())),
        Value::Bytes(b) => b.clone().map_or(V::Null, V::Blob),
        Value::Uuid(u) => u.map_or(V::Null, |u| V::Blob(u.as_bytes().to_vec())),
        Value::Json(j) => match j {
            Some(j) => V::Text(serde_json::to_string(j).map_err(|_| unsupported("JSON"))?),
            None => V::Null,
        },
        Value::ChronoDateTimeUtc(t) => {
            t.map_or(V::Null, |t| V::Text(t.to_rfc3339_opts(AutoSi, false)))
        }
        Value::ChronoDateTimeWithTimeZone(t) => {
            t.map_or(V::Null, |t| V::Text(t.to_rfc3339_opts(AutoSi, false)))
        }
        Value::ChronoDateTime(t) => {
            t.map_or(V::Null, |t| V::Text(t.format("%F %T%.f").to_string()))
        }
        Value::ChronoDate(d) => d.map_or(V::Null, |d| V::Text(d.format("%F").to_string())),
        _ => return Err(unsupported("this value type")),
    })
}

fn unsupported(what: &str) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(format!("cannot bind {what} for SQLite").into())
}

/// The one place a rusqlite connection is made from sqlx's handle.
#[allow(unsafe_code)]
mod lock {
    use super::lite_err;
    use sea_orm::{DbErr, sqlx::sqlite::LockedSqliteHandle};

    /// Runs `f` on the connection `locked` holds. The rusqlite connection borrows the handle for
    /// `f` only, and does not own it (dropping it neither closes the database nor touches
    /// sqlx's statements).
    pub fn with_connection<T>(
        locked: &mut LockedSqliteHandle<'_>,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, DbErr>,
    ) -> Result<T, DbErr> {
        let handle = locked.as_raw_handle();
        // SAFETY: `handle` is sqlx's open connection, and `locked` holds its lock (its worker
        // thread waits) for as long as `conn` lives: no one else uses the handle meanwhile, and
        // `conn` cannot outlive this call.
        let conn =
            unsafe { rusqlite::Connection::from_handle(handle.as_ptr()) }.map_err(lite_err)?;
        f(&conn)
    }

    /// Writes that are undone unless kept: a transaction, or a savepoint in one (`own`).
    pub trait Undo {
        fn keep(self) -> Result<(), DbErr>;
    }

    /// An open transaction: rolled back unless committed, also when a body panics, so the
    /// connection never goes back to sqlx inside a transaction.
    pub struct Open<'c>(pub &'c rusqlite::Connection);

    impl Undo for Open<'_> {
        fn keep(self) -> Result<(), DbErr> {
            let done = self.0.execute_batch("COMMIT").map_err(lite_err);
            // A failed COMMIT leaves the transaction open: the drop below rolls it back.
            drop(self);
            done
        }
    }

    impl Drop for Open<'_> {
        fn drop(&mut self) {
            if !self.0.is_autocommit() {
                let _ = self.0.execute_batch("ROLLBACK");
            }
        }
    }
}
