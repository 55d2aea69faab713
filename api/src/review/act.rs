//! Acting on the review service's answer on the API side (the status webhook, the click, the
//! cancel): push the job it asks for. Sends and lookups are the worker's; an event here never
//! asks for one, and the sweeper would pick one up anyway.

use crate::state::AppState;
use grove_common::{jobs::ReviewJob, review_service::Effects};
use sea_orm::DbErr;

pub async fn act(state: &AppState, review_id: &str, effects: &Effects) -> Result<(), DbErr> {
    if let Some((step, at)) = effects.schedule {
        // The fast path: a delayed job (Redis); the sweeper catches it otherwise.
        let delay = (at - state.clock.now()).to_std().unwrap_or_default();
        let job = ReviewJob::new(review_id.to_owned(), step, crate::request_id::current());
        if let Err(e) = state.queue.push_review(job, Some(delay)).await {
            tracing::warn!(error = %e, "could not schedule the review job; the sweeper will");
        }
    }
    Ok(())
}
