//! The takeover loop: every process that runs jobs looks, a few times a second, for running
//! calls whose run died with its process (its liveness lock is gone) or stalled past its time
//! lease, and re-runs them itself. It needs only the database: no queue, no job redelivery, so
//! it works while Redis is down, and a re-run starts within moments of a crash instead of when
//! the queue's orphan check comes round. Of several processes that see the same dead run, the
//! compare-and-set in `ledger::take_over` lets one win; a later redelivery of the dead run's job
//! finds the call done or held by a live run, and calls no model.
//!
//! Each process takes only its fair share, in random order: what would bring the calls it runs up
//! to the average over the processes alive (counting the orphans), so the calls of a dead worker
//! spread over the others instead of landing as one batch on the first to look (which the next
//! crash would catch all at once). A process that is slow to look (a busy machine) still gets its
//! share, because the others stop at theirs. An orphan nobody took within `PATIENCE` looks is
//! taken by whoever sees it, so a live process that stopped looking cannot strand it.

use crate::in_flight::InFlight;
use crate::jobs::{Deps, run_started};
use grove_common::clock;
use grove_common::{
    db::calls::{self, Runner},
    ledger::{self, Start},
};
use rand::seq::SliceRandom;
use sea_orm::DbErr;
use std::{sync::Arc, time::Duration};
use tokio::sync::watch;
use tracing::Instrument;
use uuid::Uuid;

/// How often to look.
pub const EVERY: Duration = Duration::from_millis(250);
/// Running calls read per look.
const CANDIDATES: u64 = 256;
/// Looks an orphan waits for a fair taker before any process takes it (2 s at `EVERY`).
const PATIENCE: u32 = 8;

/// Orphans this process has seen and left to others, with how many looks in a row.
pub type Seen = std::collections::HashMap<Uuid, u32>;

/// Looks every `EVERY` until `stopped`.
pub async fn run(deps: Arc<Deps>, mut stopped: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(EVERY);
    let mut seen = Seen::new();
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped.wait_for(|s| *s) => return,
        }
        // Without its liveness lock (the database is away) this process is dead to the
        // others: it takes nothing over until it holds a lock again.
        if deps.liveness.is_lost() {
            continue;
        }
        if let Err(e) = pass(&deps, &mut seen).await {
            // The database is unreachable: the next look tries again.
            tracing::warn!(error = %e, "takeover look failed");
        }
    }
}

/// One look. Returns how many calls this process took over (their runs go on in the
/// background).
pub async fn pass(deps: &Arc<Deps>, seen: &mut Seen) -> Result<usize, DbErr> {
    let me = deps.liveness.key();
    let running = calls::running_elsewhere(&deps.db, me, CANDIDATES).await?;
    if running.is_empty() {
        seen.clear();
        return Ok(0);
    }
    let elsewhere = running.len();
    let alive = deps.liveness.alive(&deps.db).await?;
    let now = clock::wall();
    let mut orphans: Vec<_> = running
        .into_iter()
        .filter_map(|r| {
            let lapsed = r.holder.lease_until.is_none_or(|until| until < now);
            let dead = r.holder.lease_process.is_some_and(|p| !alive.contains(p));
            (lapsed || dead).then_some((r, lapsed))
        })
        .collect();
    // Fair share: up to the average load of the live processes, orphans included.
    let mine = InFlight::count();
    let fair = (elsewhere + mine).div_ceil(alive.count().max(1));
    let share = fair.saturating_sub(mine);
    seen.retain(|id, _| orphans.iter().any(|(o, _)| o.id == *id));
    for (o, _) in &orphans {
        *seen.entry(o.id).or_default() += 1;
    }
    orphans.shuffle(&mut rand::rng());
    // Orphans that waited out their patience first, then this process's fair share of the rest.
    orphans
        .sort_by_key(|(o, _)| std::cmp::Reverse(seen.get(&o.id).copied().unwrap_or(0) > PATIENCE));
    let overdue = orphans
        .iter()
        .filter(|(o, _)| seen.get(&o.id).copied().unwrap_or(0) > PATIENCE)
        .count();
    let mut taken = 0;
    for (orphan, lapsed) in orphans.into_iter().take(overdue.max(share)) {
        let runner = Runner {
            run: Uuid::now_v7(),
            process: me,
        };
        // A lapsed time lease is re-checked in the statement itself; a dead process's run is
        // taken with a compare-and-set on the lease as read (a dead process never renews).
        let started = if lapsed {
            deps.runs.start_attempt(orphan.id, runner).await?
        } else {
            ledger::take_over(&deps.db, orphan.id, &orphan.holder, runner).await?
        };
        let Start::Started(call) = started else {
            continue;
        };
        taken += 1;
        let span = tracing::info_span!("job.coaching", call_id = %orphan.id, request_id = %orphan.request_id, takeover = true);
        span.in_scope(|| {
            tracing::warn!(
                dead_process = ?orphan.holder.lease_process,
                lapsed,
                "taking over a call whose run died; running it again"
            );
        });
        let deps = Arc::clone(deps);
        let guard = InFlight::enter();
        tokio::spawn(
            async move {
                let _guard = guard;
                if let Err(e) = run_started(&deps, *call, runner).await {
                    tracing::warn!(error = %e, "taken-over run failed; the call stays leased until it lapses");
                }
            }
            .instrument(span),
        );
    }
    Ok(taken)
}
