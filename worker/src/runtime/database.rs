//! Riding out a database outage (issue 27). A restart or a managed database's failover drops
//! every connection, the one holding this process's liveness lock among them: the others then
//! see this process as dead. So the worker stops taking jobs (its consumers keep their Redis
//! heartbeats, so what they hold is not re-queued), retries with backoff until the database
//! answers, takes a lock under a new key (a new owner: what the old key held is the others' to
//! take over), moves the runs still alive here to it, and resumes. The jobs it was running go on
//! meanwhile: their model calls do not need the database, and their writes wait for it
//! (`grove_common::db::outage::retrying`). Only when the database stays away for the limit
//! (`DATABASE_RECOVERY_LIMIT_S`) does the process exit non-zero, for its supervisor.

use super::RuntimeError;
use crate::jobs::Deps;
use grove_common::{
    consumers::ConsumerHandle,
    db::{calls, outage},
};
use std::{sync::Arc, time::Duration};
use tokio::{sync::watch, time::Instant};

/// The first pause between attempts, doubled up to `MAX_PAUSE`: short, so that every worker is
/// back within a second or so of the database (well inside `liveness::RECLAIM_GRACE`).
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// How long one attempt to take the lock again may take.
const ATTEMPT: Duration = Duration::from_secs(3);

/// Watches the liveness lock until `stopped`; pauses the consumers (`paused`) while it is lost.
/// Returns only with the error that ends the process (the database stayed away for `limit`).
pub(super) async fn keep(
    deps: Arc<Deps>,
    paused: watch::Sender<bool>,
    limit: Duration,
    health: ConsumerHandle,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), RuntimeError> {
    health.running();
    loop {
        tokio::select! {
            () = deps.liveness.lost() => {}
            _ = stopped.wait_for(|s| *s) => return Ok(()),
        }
        paused.send_replace(true);
        let lost_at = Instant::now();
        tracing::warn!(
            "lost the database (and this process's liveness lock): taking no jobs until it is back"
        );
        health.failed("lost the database connection holding the liveness lock");
        let mut pause = FIRST_PAUSE;
        let old = loop {
            if *stopped.borrow() {
                return Ok(());
            }
            // Each attempt bounded: a pool waits for a connection much longer than the limit.
            let attempt = ATTEMPT
                .min(limit.saturating_sub(lost_at.elapsed()))
                .max(FIRST_PAUSE);
            let reclaimed =
                match tokio::time::timeout(attempt, deps.liveness.reclaim(&deps.db)).await {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no connection within {attempt:?}")),
                };
            match reclaimed {
                Ok(old) => break old,
                Err(error) if lost_at.elapsed() >= limit => {
                    tracing::error!(%error, ?limit, "the database did not come back in time; stopping the worker");
                    health.dead(&error);
                    return Err(RuntimeError::DatabaseGaveUp { limit, error });
                }
                Err(e) => {
                    tracing::debug!(error = %e, retry_in = ?pause, "database still unreachable");
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        _ = stopped.wait_for(|s| *s) => return Ok(()),
                    }
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        };
        let runs = deps.leases.runs();
        let key = deps.liveness.key();
        match outage::retrying("move this process's runs to its new key", || {
            calls::adopt(&deps.db, &runs, key)
        })
        .await
        {
            Ok(moved) => tracing::warn!(
                old_owner = old,
                owner = key,
                runs = runs.len(),
                moved,
                down_for = ?lost_at.elapsed(),
                "database back: runs kept under the new key; taking jobs again"
            ),
            // They stay under the old key, which the others take over after the grace.
            Err(e) => {
                tracing::error!(error = %e, "could not move this process's runs to its new key")
            }
        }
        health.running();
        paused.send_replace(false);
    }
}
