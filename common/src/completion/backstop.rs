//! The waiters' database backstop: one pass a second over every call this process waits for,
//! in batched queries, waking the waiters of calls found final.
//!
//! Completions are pushed (in process, or over Redis pub/sub, which is at-most-once), so a
//! waiter could miss one: a message published while this process's subscription was down, or a
//! publish that failed. Each waiter used to re-read its own call once a second — at 10,000 calls
//! waiting on a 10 s model that was 20,000 queries a second (issue 31). One pass reads the
//! statuses of up to `CHUNK` waited-for calls per query: 20 queries a second for 10,000 waiters.

use super::Waiters;
use crate::{db::entities::call, ledger::CallStatus};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect,
};
use std::{sync::Arc, time::Duration};
use tokio::sync::watch;
use uuid::Uuid;

/// How often the backstop looks: the most a lost completion message delays its answer.
pub const EVERY: Duration = Duration::from_secs(1);

/// Call ids per query (well under SQLite's 32,766 bound parameters and PostgreSQL's 65,535).
const CHUNK: usize = 500;

/// One pass: the waited-for calls that are final now get their waiters woken (each then reads
/// its call as after any wake-up). A database that cannot answer is tried again next pass.
pub(super) async fn pass(waiters: &Waiters, db: &DatabaseConnection) {
    let ids: Vec<Uuid> = waiters.ids();
    for chunk in ids.chunks(CHUNK) {
        match final_among(db, chunk).await {
            Ok(done) => {
                for id in done {
                    waiters.wake(id, None);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "completion backstop could not read calls; next pass");
                return;
            }
        }
    }
}

/// Which of `ids` are final (completed, failed or unpaid), in one query.
async fn final_among(db: &impl ConnectionTrait, ids: &[Uuid]) -> Result<Vec<Uuid>, DbErr> {
    call::Entity::find()
        .select_only()
        .column(call::Column::Id)
        .filter(call::Column::Id.is_in(ids.iter().copied()))
        .filter(call::Column::Status.is_in([
            CallStatus::Completed,
            CallStatus::Failed,
            CallStatus::Unpaid,
        ]))
        .into_tuple()
        .all(db)
        .await
}

/// Runs passes every [`EVERY`] until `stopped` turns true.
pub(super) async fn run(
    waiters: Arc<Waiters>,
    db: DatabaseConnection,
    mut stopped: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped.wait_for(|s| *s) => return,
        }
        pass(&waiters, &db).await;
    }
}
