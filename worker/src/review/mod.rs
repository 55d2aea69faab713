//! Review-request jobs: the first send (or its deferral), the follow-up, and the sweeper that
//! picks up anything due that a lost job missed. Every SMS is keyed by its message row, which
//! exists before the provider is called, so a re-run never sends twice.

mod deliver;
mod failure;
mod follow_up;
pub mod guard;
mod outcome;
mod send;
pub mod sweep;

use crate::jobs::{Deps, JobError};
use apalis::prelude::Data;
use follow_up::send_follow_up;
use grove_common::jobs::{ReviewJob, ReviewStep};
use send::send_initial;
use std::sync::Arc;
use tracing::Instrument;

pub async fn review_job(job: ReviewJob, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let deps: Arc<Deps> = Arc::clone(&deps);
    crate::jobs::detached(async move { handle(&deps, &job).await }).await
}

/// Runs one review job. Safe to run more than once, and twice at the same moment.
pub async fn handle(deps: &Deps, job: &ReviewJob) -> Result<(), JobError> {
    let span = tracing::info_span!("job.review", review_id = %job.review_id, step = ?job.step, request_id = %job.request_id);
    async move {
        match job.step {
            ReviewStep::Send => send_initial(deps, &job.review_id).await,
            ReviewStep::FollowUp => send_follow_up(deps, &job.review_id).await,
        }
    }
    .instrument(span)
    .await
}
