//! Carrying out what the review service answered: send a message, look one up, push a job for
//! later. Each outcome goes back to the service as an event, and its answer is acted on in
//! turn, until nothing is left to do.

use super::deliver;
use crate::{
    jobs::{Deps, JobError},
    sms::{Lookup, SentQuery},
};
use grove_common::{
    db::outage,
    jobs::ReviewJob,
    review_service::{self, Effects, LookUp, Report, ReportSource, ReviewEvent},
};

pub(super) async fn act(deps: &Deps, review_id: &str, first: Effects) -> Result<(), JobError> {
    let mut effects = first;
    loop {
        if let Some((step, at)) = effects.schedule {
            // The fast path: a delayed job. The sweeper finds the request when it is due anyway.
            let delay = (at - deps.clock.now()).to_std().unwrap_or_default();
            let job = ReviewJob::new(
                review_id.to_owned(),
                step,
                format!("review-{}", deps.clock.now().timestamp()),
            );
            if let Err(e) = deps.queue.push_review(job, Some(delay)).await {
                tracing::warn!(error = %e, "could not push the review job; the sweeper will");
            }
        }
        let next = if let Some(order) = effects.send.take() {
            deliver::deliver(deps, review_id, order).await?
        } else if let Some(look) = effects.look_up.take() {
            look_up(deps, &look).await
        } else {
            None
        };
        let Some(event) = next else {
            return Ok(());
        };
        effects = apply(deps, review_id, event).await?;
    }
}

/// Tells the service `event`, through a database blip: a statement refused for an unreachable
/// database, or a commit whose answer was lost. The service decides again from what is stored,
/// so telling it twice is safe (a move already written is found made and changes nothing),
/// and what a run learned (above all the provider's answer to a send) is not left to the
/// sweeper's lookup minutes later.
pub(super) async fn apply(
    deps: &Deps,
    review_id: &str,
    event: ReviewEvent,
) -> Result<Effects, JobError> {
    let effects = outage::retrying("a review request's event", || {
        review_service::apply(&deps.db, review_id, event.clone(), deps.clock.now())
    })
    .await?;
    Ok(effects)
}

/// Asks the provider whether the message went. No answer (the provider unreachable, or unable
/// to list) leaves the request unconfirmed; the sweeper asks again.
async fn look_up(deps: &Deps, look: &LookUp) -> Option<ReviewEvent> {
    let query = SentQuery {
        to: &look.to,
        body: &look.body,
        since: look.since,
    };
    match deps.sms.find_sent(&query).await {
        Ok(Lookup::Found {
            provider_id,
            status,
            error_code,
        }) => Some(ReviewEvent::Reported(Report {
            message: look.message,
            provider_id,
            status,
            error_code,
            source: ReportSource::Lookup,
        })),
        Ok(Lookup::NotListed) => Some(ReviewEvent::NothingListed {
            message: look.message,
        }),
        Ok(Lookup::Unsupported) => None,
        Err(e) => {
            tracing::warn!(error = %e, "could not look the message up; will ask again");
            None
        }
    }
}
