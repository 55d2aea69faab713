//! The one reminder: sent when due unless the link was clicked, the guard refuses (the request
//! then completes without it), or the recipient's window is closed (it waits).

use super::{deliver::deliver, guard, guard::Decision};
use crate::jobs::{Deps, JobError};
use grove_common::{
    db::reviews::{self, lifecycle, message_kind},
    review::ReviewStatus,
};
use serde_json::json;

pub(super) async fn send_follow_up(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        return Ok(());
    };
    let now = deps.clock.now();
    if req.status != ReviewStatus::FollowUpScheduled
        || req.follow_up_due_at.is_none_or(|due| due > now)
    {
        return Ok(());
    }
    if req.clicked_at.is_some() {
        lifecycle::advance(
            &deps.db,
            &req.id,
            ReviewStatus::Completed,
            json!({"reason": "clicked"}),
            now,
        )
        .await?;
        return Ok(());
    }
    match guard::at_send_time(&deps.db, &req, now).await? {
        Decision::Refuse { status: to, reason } => {
            // A refused reminder does not undo a delivered request: opted out stays opted out,
            // anything else completes without the reminder.
            let to = if to == ReviewStatus::OptedOut {
                to
            } else {
                ReviewStatus::Completed
            };
            lifecycle::advance(
                &deps.db,
                &req.id,
                to,
                json!({"reason": reason, "follow_up": "skipped"}),
                now,
            )
            .await?;
        }
        Decision::Defer { until } => {
            lifecycle::defer_follow_up(&deps.db, &req.id, until, now).await?;
        }
        Decision::Send { validity } => {
            deliver(deps, &req, message_kind::FOLLOW_UP, validity).await?
        }
    }
    Ok(())
}
