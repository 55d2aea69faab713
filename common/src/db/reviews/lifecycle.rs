//! Every write of a review request's state: forward moves along the road of
//! [`ReviewStatus::may_become`], each with its event in the request's log, and the few named
//! moves that carry more (deferral, delivery, opt-out, the recovery of an unknown send). A move
//! that is a duplicate, late or backward changes nothing and says so (`false`), so concurrent
//! writers (two runs of a job, a webhook and the sweeper) settle on one outcome.

use super::{event, open_for_phone, rfc3339, set_suppression};
use crate::{db::entities::review_request, review::ReviewStatus};
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, UpdateMany, sea_query::Expr,
};
use serde_json::{Value, json};

/// The suppression reason of a phone the provider reports opted out (Twilio error 21610).
pub const PROVIDER_OPT_OUT: &str = "provider_21610";

/// Moves a request forward to `to`, atomically and only from a state that may become it;
/// records the event. False (and nothing changed) for a duplicate, late or backward move.
pub async fn advance(
    db: &impl ConnectionTrait,
    id: &str,
    to: ReviewStatus,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    advance_with(db, id, to, detail, at, |u| u).await
}

/// `advance`, also setting extra columns in the same statement.
pub async fn advance_with(
    db: &impl ConnectionTrait,
    id: &str,
    to: ReviewStatus,
    detail: Value,
    at: DateTime<Utc>,
    extra: impl FnOnce(UpdateMany<review_request::Entity>) -> UpdateMany<review_request::Entity>,
) -> Result<bool, DbErr> {
    let update = review_request::Entity::update_many()
        .col_expr(review_request::Column::Status, Expr::value(to))
        .col_expr(review_request::Column::UpdatedAt, Expr::value(at))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.is_in(ReviewStatus::sources(to)));
    let moved = extra(update).exec(db).await?.rows_affected == 1;
    if moved {
        event(db, id, to.as_str(), detail, at).await?;
    }
    Ok(moved)
}

/// The first message is due outside the recipient's window: wait for it to open at `until`.
pub async fn defer_first_send(
    db: &impl ConnectionTrait,
    id: &str,
    until: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    advance_with(
        db,
        id,
        ReviewStatus::Deferred,
        json!({"until": rfc3339(until)}),
        at,
        |u| u.col_expr(review_request::Column::SendAt, Expr::value(until)),
    )
    .await
}

/// A request found at `sending` with no message row (its run stopped before attempting) whose
/// window has closed meanwhile steps back to `deferred`: the one move back on the road, safe
/// because nothing was sent.
pub async fn defer_unattempted_send(
    db: &impl ConnectionTrait,
    id: &str,
    until: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let moved = review_request::Entity::update_many()
        .col_expr(
            review_request::Column::Status,
            Expr::value(ReviewStatus::Deferred),
        )
        .col_expr(review_request::Column::SendAt, Expr::value(until))
        .col_expr(review_request::Column::UpdatedAt, Expr::value(at))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.eq(ReviewStatus::Sending))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if moved {
        let detail = json!({"until": rfc3339(until)});
        event(db, id, ReviewStatus::Deferred.as_str(), detail, at).await?;
    }
    Ok(moved)
}

/// The reminder is due outside the recipient's window: it waits for `until` (the state stays
/// `follow_up_scheduled`).
pub async fn defer_follow_up(
    db: &impl ConnectionTrait,
    id: &str,
    until: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    review_request::Entity::update_many()
        .col_expr(
            review_request::Column::FollowUpDueAt,
            Expr::value(Some(until)),
        )
        .filter(review_request::Column::Id.eq(id))
        .exec(db)
        .await?;
    let detail = json!({"until": rfc3339(until)});
    event(db, id, "follow_up_deferred_quiet_hours", detail, at).await
}

/// The initial message was delivered (or has sat at `sent` for 24 h without a report): schedule
/// the follow-up `after_hours` later, or complete the request when follow-ups are off or the
/// link was already clicked. Returns when the follow-up is due, if one was scheduled.
pub async fn on_initial_delivered(
    db: &impl ConnectionTrait,
    req: &review_request::Model,
    delivered_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    if req.clicked_at.is_some() || !req.follow_up_enabled {
        let reason = if req.clicked_at.is_some() {
            "clicked"
        } else {
            "no_follow_up"
        };
        advance(
            db,
            &req.id,
            ReviewStatus::Completed,
            json!({"reason": reason}),
            now,
        )
        .await?;
        return Ok(None);
    }
    let due = delivered_at + chrono::Duration::hours(i64::from(req.follow_up_after_hours));
    let moved = advance_with(
        db,
        &req.id,
        ReviewStatus::FollowUpScheduled,
        json!({"due_at": rfc3339(due)}),
        now,
        |u| {
            u.col_expr(
                review_request::Column::FollowUpDueAt,
                Expr::value(Some(due)),
            )
        },
    )
    .await?;
    Ok(moved.then_some(due))
}

/// A first send whose outcome a crash left unknown ended its request `failed`. When the
/// provider later reports the message sent or delivered, the request resumes at `sent`, where
/// the send would have left it (the caller then applies the report as usual: a delivery
/// schedules the follow-up). The only move out of a terminal state. False when the request is
/// not in that state.
pub async fn resume_after_unknown_send(
    db: &impl ConnectionTrait,
    id: &str,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let moved = review_request::Entity::update_many()
        .col_expr(
            review_request::Column::Status,
            Expr::value(ReviewStatus::Sent),
        )
        .col_expr(review_request::Column::UpdatedAt, Expr::value(at))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.eq(ReviewStatus::Failed))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if moved {
        event(db, id, "send_outcome_recovered", detail, at).await?;
    }
    Ok(moved)
}

/// The recipient opted out (a STOP, plain words, or the provider's 21610): suppress the phone
/// and end every request to it that has not finished, each with `detail` in its log. Returns
/// how many requests it ended.
pub async fn opt_out(
    db: &impl ConnectionTrait,
    phone: &str,
    reason: &str,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<usize, DbErr> {
    set_suppression(db, phone, true, reason, at).await?;
    let mut ended = 0;
    for req in open_for_phone(db, phone).await? {
        if advance(db, &req.id, ReviewStatus::OptedOut, detail.clone(), at).await? {
            ended += 1;
        }
    }
    Ok(ended)
}
