//! The first message of a review request: sent, deferred to the recipient's window, or refused
//! by the guard; a run that died between marking and finishing is resumed from its message row.

use super::{deliver::deliver, guard, guard::Decision, outcome};
use crate::jobs::{Deps, JobError};
use grove_common::{
    db::{
        entities::review_request,
        reviews::{self, lifecycle, message_kind},
    },
    review::ReviewStatus,
};
use serde_json::json;

pub(super) async fn send_initial(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        tracing::warn!("job for an unknown review request; dropping it");
        return Ok(());
    };
    let now = deps.clock.now();
    if req.status.awaits_first_send() && req.send_at <= now {
        match guard::at_send_time(&deps.db, &req, now).await? {
            Decision::Refuse { status: to, reason } => {
                lifecycle::advance(&deps.db, &req.id, to, json!({"reason": reason}), now).await?;
            }
            Decision::Defer { until } => {
                lifecycle::defer_first_send(&deps.db, &req.id, until, now).await?;
            }
            Decision::Send { validity } => {
                let sending = ReviewStatus::Sending;
                if lifecycle::advance(&deps.db, &req.id, sending, json!({}), now).await? {
                    deliver(deps, &req, message_kind::INITIAL, validity).await?;
                }
            }
        }
    } else if req.status == ReviewStatus::Sending {
        // A run that crashed between marking and finishing: the message row decides. With no
        // row, nothing was attempted, so this is a first send and passes the guard like one.
        let attempted = reviews::message(&deps.db, &req.id, message_kind::INITIAL)
            .await?
            .is_some();
        let validity = if attempted {
            Some(std::time::Duration::from_secs(3600))
        } else {
            guarded_resume(deps, &req, now).await?
        };
        if let Some(validity) = validity {
            deliver(deps, &req, message_kind::INITIAL, validity).await?;
        }
    }
    outcome::first_outcome(deps, review_id).await
}

/// The send-time guard for a request found at `sending` with no attempt recorded: `Some` when it
/// may be sent now; otherwise the request is refused or moved back to `deferred` (safe: no
/// message exists) and `None`.
async fn guarded_resume(
    deps: &Deps,
    req: &review_request::Model,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<std::time::Duration>, JobError> {
    Ok(match guard::at_send_time(&deps.db, req, now).await? {
        Decision::Send { validity } => Some(validity),
        Decision::Refuse { status: to, reason } => {
            lifecycle::advance(&deps.db, &req.id, to, json!({"reason": reason}), now).await?;
            None
        }
        Decision::Defer { until } => {
            lifecycle::defer_unattempted_send(&deps.db, &req.id, until, now).await?;
            None
        }
    })
}
