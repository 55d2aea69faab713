//! The sweeper: a periodic job (apalis-cron) that finds review work that is due and pushes the
//! job for it. Delayed jobs are the fast path; the sweeper is what makes a lost job harmless.
//! Several replicas may sweep at once: every job it pushes is safe to run twice.

use crate::jobs::{Deps, JobError};
use apalis::prelude::Data;
use grove_common::review_service::ReviewEvent;
use grove_common::{
    db::reviews,
    jobs::{ReviewJob, ReviewStep},
    review::ReviewStatus,
    review_service,
};
use std::sync::Arc;

pub async fn sweep_tick(_tick: apalis_cron::Tick, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let deps: Arc<Deps> = Arc::clone(&deps);
    sweep(&deps).await.map(|_| ())
}

/// One pass; returns how many jobs it pushed or requests it moved.
pub async fn sweep(deps: &Deps) -> Result<usize, JobError> {
    let now = deps.clock.now();
    let mut acted = 0;
    for req in reviews::due(&deps.db, now).await? {
        let step = match req.status {
            // Due sends, postponed tries, sends whose run may have died, and unconfirmed sends
            // to look up again: the send job asks the service which.
            ReviewStatus::Scheduled
            | ReviewStatus::Deferred
            | ReviewStatus::Sending
            | ReviewStatus::Unconfirmed => Some(ReviewStep::Send),
            ReviewStatus::FollowUpScheduled | ReviewStatus::FollowUpUnconfirmed => {
                Some(ReviewStep::FollowUp)
            }
            ReviewStatus::Sent => {
                // 24 h at `sent` with no delivery report: treat as delivered then.
                let event = ReviewEvent::DeliveryReportOverdue;
                let effects = review_service::apply(&deps.db, &req.id, event, now).await?;
                super::act::act(deps, &req.id, effects).await?;
                acted += 1;
                None
            }
            _ => None,
        };
        if let Some(step) = step {
            let job = ReviewJob::new(req.id.clone(), step, format!("sweep-{}", now.timestamp()));
            if let Err(e) = deps.queue.push_review(job, None).await {
                tracing::warn!(error = %e, review_id = %req.id, "sweeper could not push a due job");
            } else {
                acted += 1;
            }
        }
    }
    if acted > 0 {
        tracing::info!(acted, "sweeper pushed due review work");
    }
    deps.sweeps.record(now, acted);
    Ok(acted)
}
