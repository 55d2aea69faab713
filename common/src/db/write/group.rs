//! Group commit on our own SQLite connection (`own`): transactions that run while one is open
//! share its COMMIT.
//!
//! A COMMIT is the dear part of a small write transaction: in WAL mode it appends every page
//! the transaction changed to the log, and a paid call's three transactions change the same
//! hot pages (the newest leaf of `calls`, of its status index, of `payments`). So the first
//! transaction to find the connection idle begins a *batch* (`BEGIN IMMEDIATE`) and spawns its
//! committer; every transaction that runs before the committer does (the tasks that are ready
//! on the runtime meanwhile) runs in a savepoint of the same SQLite transaction; the committer
//! yields until a yield brings no new member (at most `own::MAX_YIELDS` times), then COMMITs,
//! and each hot page is written once for all of them (issue 12).
//!
//! Nothing is acknowledged early: every member, also one that rolled its own savepoint back,
//! waits for the batch's COMMIT before it returns, because what it saw (another member's
//! uncommitted claim, say) is only true once that COMMIT is. A failed COMMIT fails every
//! member, as its own failed COMMIT did before. The batch is one serializable history: the
//! members ran one after another on one connection, and commit or fail together.

use super::{lite_err, lock::Undo};
use sea_orm::DbErr;
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering::Relaxed},
};
use tokio::sync::watch;

/// One shared SQLite transaction, until its COMMIT is known, and how many members it has.
pub(super) struct Batch(watch::Sender<Option<Result<(), String>>>, AtomicUsize);

impl Batch {
    pub fn new() -> Arc<Self> {
        Arc::new(Self(watch::Sender::new(None), AtomicUsize::new(1)))
    }

    pub fn join(&self) {
        self.1.fetch_add(1, Relaxed);
    }

    pub fn members(&self) -> usize {
        self.1.load(Relaxed)
    }

    /// Waits for the batch's COMMIT: Ok once it is durable, an error if it failed (every
    /// member's writes are then gone).
    pub async fn committed(&self) -> Result<(), DbErr> {
        let mut done = self.0.subscribe();
        let found = done
            .wait_for(Option::is_some)
            .await
            .map_err(|_| DbErr::Custom("sqlite: the batch's committer went away".into()))?;
        match &*found {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(DbErr::Custom(format!("sqlite: commit failed: {e}"))),
            None => unreachable!("wait_for returns a value its predicate accepted"),
        }
    }

    /// Commits the batch that `conn` has open, and tells its members.
    pub fn commit(&self, conn: &rusqlite::Connection) {
        let done = conn.execute_batch("COMMIT").map_err(|e| e.to_string());
        if !conn.is_autocommit() {
            // A failed COMMIT leaves the transaction open.
            let _ = conn.execute_batch("ROLLBACK");
        }
        self.0.send_replace(Some(done));
    }
}

/// One member's writes in the batch: released into it when kept, rolled back to where they
/// began otherwise (also when a body panics).
pub(super) struct Savepoint<'c>(&'c rusqlite::Connection);

impl<'c> Savepoint<'c> {
    pub fn begin(conn: &'c rusqlite::Connection) -> Result<Self, DbErr> {
        run(conn, "SAVEPOINT member")?;
        Ok(Self(conn))
    }
}

impl Undo for Savepoint<'_> {
    fn keep(self) -> Result<(), DbErr> {
        let kept = run(self.0, "RELEASE member");
        // Kept: nothing left for the drop to undo.
        std::mem::forget(self);
        kept
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        let _ = run(self.0, "ROLLBACK TO member");
        let _ = run(self.0, "RELEASE member");
    }
}

fn run(conn: &rusqlite::Connection, sql: &str) -> Result<(), DbErr> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.raw_execute())
        .map(|_| ())
        .map_err(lite_err)
}
