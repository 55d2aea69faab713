//! A database that cannot be reached right now, told apart from a statement that failed: a
//! restart or a managed database's failover drops every connection and refuses new ones for a
//! few seconds, and that is a blip to ride out (issue 27), not a bug. The api answers such an
//! error with 503 and `Retry-After` (never 500); a worker's run waits for the database to come
//! back before it gives up its work (`retrying`).

use sea_orm::{DbErr, RuntimeErr, sqlx};
use std::{future::Future, time::Duration};

/// How long a run waits for the database to come back before its write fails for good: the
/// worker's own default limit (`DATABASE_RECOVERY_LIMIT_S`), within which it takes its
/// liveness lock again and keeps its runs.
pub const RIDE_OUT: Duration = Duration::from_secs(60);

/// The first pause between attempts, doubled up to `MAX_PAUSE`: a restarted server answers
/// within a second or so of coming back.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// True when `e` says the database could not be reached (connection refused, reset or closed,
/// no connection in time, the server shutting down or starting up), rather than that a
/// statement was wrong or refused.
pub fn is_unreachable(e: &DbErr) -> bool {
    match e {
        DbErr::ConnectionAcquire(_) => true,
        DbErr::Conn(inner) | DbErr::Exec(inner) | DbErr::Query(inner) => match inner {
            RuntimeErr::SqlxError(e) => sqlx_unreachable(e),
            _ => false,
        },
        _ => false,
    }
}

/// Whether `e` ended a statement that was sent: the connection failed under it, so the server
/// may have run and committed it (the third outcome, "we do not know"). A pool that could not
/// hand out a connection sent nothing.
pub fn answer_lost(e: &DbErr) -> bool {
    match e {
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            !matches!(**e, sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed)
                && sqlx_unreachable(e)
        }
        _ => false,
    }
}

fn sqlx_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        // SQLSTATE class 08 (connection exception) and 57P01-57P03 (admin shutdown, crash
        // shutdown, cannot connect now: what a restart answers while it goes and comes back).
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        // A connection that the server closed under a statement surfaces as a protocol error.
        sqlx::Error::Protocol(message) => {
            message.contains("closed") || message.contains("unexpected end")
        }
        _ => false,
    }
}

/// Runs `op` until it succeeds, fails with anything but an unreachable database, or the
/// database stays unreachable for `RIDE_OUT`. For the writes a run must not lose to a blip
/// (its model answers, its outcome): they are idempotent, or guarded by the run's lease.
pub async fn retrying<T, F, Fut>(what: &str, op: F) -> Result<T, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DbErr>>,
{
    retrying_within(what, RIDE_OUT, op).await
}

/// `retrying`, giving up once the database has been unreachable for `limit` (an attempt that
/// waits for a connection may take the pool's acquire timeout beyond it).
pub async fn retrying_within<T, F, Fut>(what: &str, limit: Duration, mut op: F) -> Result<T, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DbErr>>,
{
    let give_up = tokio::time::Instant::now() + limit;
    let mut pause = FIRST_PAUSE;
    loop {
        match op().await {
            Err(e) if is_unreachable(&e) && tokio::time::Instant::now() < give_up => {
                tracing::warn!(error = %e, what, retry_in = ?pause, "database unreachable; waiting for it");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
            other => return other,
        }
    }
}

/// Runs the write `op` once; if its answer was lost (`answer_lost`), again through the blip
/// (`retrying_within`). Returns the last answer, and whether an attempt before it may have
/// written: the caller then reads that answer knowing its own earlier write may be what it
/// found (a scope held by its own call, a call already moved by its own outcome).
pub async fn knowing<T, F, Fut>(what: &str, limit: Duration, mut op: F) -> Result<(T, bool), DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DbErr>>,
{
    match op().await {
        Err(e) if answer_lost(&e) => {
            tracing::warn!(error = %e, what, "a write's answer was lost; writing it again to learn whether it was written");
            Ok((retrying_within(what, limit, op).await?, true))
        }
        done => Ok((done?, false)),
    }
}

/// Runs the read `op` once, or through a blip (`retrying_within`) when `after_lost_answer`: what
/// it reads then decides what a write whose answer was lost did (`knowing`), and an error would
/// leave that unknown.
pub async fn read_knowing<T, F, Fut>(
    after_lost_answer: bool,
    what: &str,
    limit: Duration,
    mut op: F,
) -> Result<T, DbErr>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DbErr>>,
{
    match after_lost_answer {
        true => retrying_within(what, limit, op).await,
        false => op().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn sqlx_err(e: sqlx::Error) -> DbErr {
        DbErr::Query(RuntimeErr::SqlxError(Arc::new(e)))
    }

    #[test]
    fn lost_connections_are_unreachable_and_bad_statements_are_not() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(is_unreachable(&sqlx_err(sqlx::Error::Io(io))));
        assert!(is_unreachable(&sqlx_err(sqlx::Error::PoolTimedOut)));
        assert!(is_unreachable(&DbErr::ConnectionAcquire(
            sea_orm::error::ConnAcquireErr::Timeout
        )));
        assert!(!is_unreachable(&sqlx_err(sqlx::Error::RowNotFound)));
        assert!(!is_unreachable(&DbErr::Custom("constraint".into())));
        assert!(!is_unreachable(&DbErr::RecordNotFound("x".into())));
    }

    #[test]
    fn an_answer_is_lost_only_for_a_statement_that_was_sent() {
        let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof");
        assert!(answer_lost(&sqlx_err(sqlx::Error::Io(io))));
        assert!(!answer_lost(&sqlx_err(sqlx::Error::PoolTimedOut)));
        assert!(!answer_lost(&DbErr::ConnectionAcquire(
            sea_orm::error::ConnAcquireErr::Timeout
        )));
        assert!(!answer_lost(&sqlx_err(sqlx::Error::RowNotFound)));
    }

    #[tokio::test]
    async fn retrying_rides_out_unreachable_errors_and_returns_the_rest_at_once() {
        let mut attempts = 0;
        let got = retrying("test", || {
            attempts += 1;
            let n = attempts;
            async move {
                if n < 3 {
                    Err(sqlx_err(sqlx::Error::PoolTimedOut))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(got.expect("third attempt"), 3);
        let mut tries = 0;
        let failed: Result<(), _> = retrying("test", || {
            tries += 1;
            async { Err(DbErr::Custom("bad statement".into())) }
        })
        .await;
        assert!(failed.is_err());
        assert_eq!(tries, 1, "a wrong statement is not retried");
    }
}
