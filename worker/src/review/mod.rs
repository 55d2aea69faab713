//! Review-request jobs: the first send, the follow-up, and the sweeper that picks up anything
//! due that a lost job missed. Each job reads as parse → apply → act: the job names its step,
//! the review service (`grove_common::review_service`) decides what it means for the request
//! as it stands, and `act` carries out what the service answers (send, look up, schedule,
//! release), telling the service each outcome in turn. Every SMS is keyed by its message row,
//! which exists before the provider is called, so a re-run never sends twice.

mod act;
mod deliver;
mod outcome;
pub mod sweep;

use crate::jobs::{Deps, JobError};
use apalis::prelude::Data;
use grove_common::{
    jobs::{ReviewJob, ReviewStep},
    review_service::ReviewEvent,
};
use std::sync::Arc;
use tracing::Instrument;

pub async fn review_job(job: ReviewJob, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let deps: Arc<Deps> = Arc::clone(&deps);
    crate::jobs::detached(async move { handle(&deps, &job).await }).await
}

/// Runs one review job. Safe to run more than once, and twice at the same moment.
pub async fn handle(deps: &Deps, job: &ReviewJob) -> Result<(), JobError> {
    let span = tracing::info_span!("job.review", otel.kind = "consumer", review_id = %job.review_id, step = ?job.step, request_id = %job.request_id);
    grove_common::telemetry::continue_trace(&span, job.trace.as_deref());
    async move {
        let event = match job.step {
            ReviewStep::Send => ReviewEvent::SendDue,
            ReviewStep::FollowUp => ReviewEvent::FollowUpDue,
        };
        let effects = act::apply(deps, &job.review_id, event).await?;
        act::act(deps, &job.review_id, effects).await?;
        if job.step == ReviewStep::Send {
            outcome::first_outcome(deps, &job.review_id).await?;
        }
        Ok(())
    }
    .instrument(span)
    .await
}
