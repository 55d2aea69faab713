//! Review requests in the database: reading the rows and their event log, messages keyed so
//! that each is sent at most once (`attempt`, `messages`), and the suppression list
//! (CONTRACT 9). A request's state and its log are written only by `review_service`.

use super::entities::{review_event, review_message, review_request, suppression};
use crate::review::ReviewStatus;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
};
use serde_json::{Value, json};
use uuid::Uuid;

/// How often an unconfirmed send is looked up again until the answer is final (the sweep finds
/// it again after this; `review_service` schedules it).
pub const LOOK_AGAIN_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

mod attempt;
mod messages;
pub use attempt::{
    ATTEMPT_HEARTBEAT, ATTEMPT_STALE_AFTER, Attempt, CALLBACK_MESSAGE_PARAM, NewMessage,
    begin_attempt, callback_url, claim, in_flight, touch_attempt,
};
pub use messages::{
    history, message, message_by_id, message_by_provider_id, message_status, messages,
};

/// The states' texts, as the published schemas list them. The states themselves are
/// [`ReviewStatus`]; code compares and stores those.
pub mod status {
    use crate::review::ReviewStatus::*;
    pub const SCHEDULED: &str = Scheduled.as_str();
    pub const DEFERRED: &str = Deferred.as_str();
    pub const SENDING: &str = Sending.as_str();
    pub const UNCONFIRMED: &str = Unconfirmed.as_str();
    pub const SENT: &str = Sent.as_str();
    pub const DELIVERED: &str = Delivered.as_str();
    pub const FOLLOW_UP_SCHEDULED: &str = FollowUpScheduled.as_str();
    pub const FOLLOW_UP_UNCONFIRMED: &str = FollowUpUnconfirmed.as_str();
    pub const FOLLOW_UP_SENT: &str = FollowUpSent.as_str();
    pub const COMPLETED: &str = Completed.as_str();
    pub const OPTED_OUT: &str = OptedOut.as_str();
    pub const FAILED: &str = Failed.as_str();
    pub const CANCELLED: &str = Cancelled.as_str();
}

pub mod message_kind {
    pub const INITIAL: &str = "initial";
    pub const FOLLOW_UP: &str = "follow_up";
}

pub async fn load(
    db: &impl ConnectionTrait,
    id: &str,
) -> Result<Option<review_request::Model>, DbErr> {
    review_request::Entity::find_by_id(id.to_owned())
        .one(db)
        .await
}

pub async fn by_call(
    db: &impl ConnectionTrait,
    call_id: Uuid,
) -> Result<Option<review_request::Model>, DbErr> {
    review_request::Entity::find()
        .filter(review_request::Column::CallId.eq(call_id))
        .one(db)
        .await
}

pub async fn events(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<Vec<review_event::Model>, DbErr> {
    review_event::Entity::find()
        .filter(review_event::Column::RequestId.eq(request_id))
        .order_by_asc(review_event::Column::CreatedAt)
        .order_by_asc(review_event::Column::Id)
        .all(db)
        .await
}

pub async fn is_suppressed(db: &impl ConnectionTrait, phone: &str) -> Result<bool, DbErr> {
    Ok(suppression::Entity::find_by_id(phone.to_owned())
        .one(db)
        .await?
        .is_some_and(|s| s.active))
}

/// Sets (`active`) or lifts a phone's suppression.
pub async fn set_suppression(
    db: &impl ConnectionTrait,
    phone: &str,
    active: bool,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = suppression::ActiveModel {
        phone: Set(phone.to_owned()),
        active: Set(active),
        reason: Set(reason.to_owned()),
        updated_at: Set(at),
    };
    suppression::Entity::insert(row)
        .on_conflict(
            sea_orm::sea_query::OnConflict::column(suppression::Column::Phone)
                .update_columns([
                    suppression::Column::Active,
                    suppression::Column::Reason,
                    suppression::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Every request to `phone` that has not finished.
pub async fn open_for_phone(
    db: &impl ConnectionTrait,
    phone: &str,
) -> Result<Vec<review_request::Model>, DbErr> {
    review_request::Entity::find()
        .filter(review_request::Column::Phone.eq(phone))
        .filter(review_request::Column::Status.is_not_in(ReviewStatus::TERMINAL))
        .all(db)
        .await
}

/// Whether a request to `phone` was sold at or after `since`: its sale mark (`phone_marks`),
/// which a request that ended without texting anyone gives back, so that it starts no cooldown.
pub async fn requested_since(
    db: &impl ConnectionTrait,
    phone: &str,
    since: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(
        super::entities::phone_mark::Entity::find_by_id(phone.to_owned())
            .one(db)
            .await?
            .is_some_and(|mark| mark.last_at >= since),
    )
}

/// The tracked-request response (CONTRACT 9), as returned by the paid call and kept as its result.
pub fn response_json(
    req: &review_request::Model,
    message: Option<&review_message::Model>,
    preview: (&str, &str, u32),
    public_base_url: &str,
    receipt: Value,
    failure: Option<Value>,
) -> Value {
    let (body, encoding, segments) = match message {
        Some(m) => (
            m.body.as_str(),
            m.encoding.as_str(),
            u32::try_from(m.segments).unwrap_or(1),
        ),
        None => preview,
    };
    let self_path = crate::catalog::paths::review_request(&req.id);
    json!({
        "id": req.id,
        "status": req.status,
        "created_at": rfc3339(req.created_at),
        "scheduled_send_at": rfc3339(req.send_at),
        "message": {"body": body, "encoding": encoding, "segments": segments},
        "follow_up": {"enabled": req.follow_up_enabled, "due_at": req.follow_up_due_at.map(rfc3339)},
        "links": {"self": format!("{public_base_url}{self_path}"), "cancel": format!("{public_base_url}{self_path}/cancel")},
        "receipt": receipt,
        "failure": failure,
    })
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Due work for the sweeper: initial sends whose time has come (postponed tries included),
/// follow-ups that are due, requests stuck at `sent` for 24 h without a delivery report, sends
/// whose run may have died mid-call, and unconfirmed sends not looked up for a while.
pub async fn due(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<Vec<review_request::Model>, DbErr> {
    use sea_orm::Condition;
    let stale_sent = now - chrono::Duration::hours(24);
    review_request::Entity::find()
        .filter(
            Condition::any()
                .add(
                    Condition::all()
                        .add(
                            review_request::Column::Status
                                .is_in([ReviewStatus::Scheduled, ReviewStatus::Deferred]),
                        )
                        .add(review_request::Column::SendAt.lte(now)),
                )
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(ReviewStatus::FollowUpScheduled))
                        .add(review_request::Column::FollowUpDueAt.lte(now)),
                )
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(ReviewStatus::Sent))
                        .add(review_request::Column::UpdatedAt.lte(stale_sent)),
                )
                // A send whose run may have died mid-call: the job decides from the message's
                // lease whether it is still live.
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(ReviewStatus::Sending))
                        .add(review_request::Column::UpdatedAt.lte(now - ATTEMPT_STALE_AFTER)),
                )
                .add(
                    Condition::all()
                        .add(
                            review_request::Column::Status.is_in([
                                ReviewStatus::Unconfirmed,
                                ReviewStatus::FollowUpUnconfirmed,
                            ]),
                        )
                        .add(review_request::Column::UpdatedAt.lte(now - LOOK_AGAIN_AFTER)),
                ),
        )
        .all(db)
        .await
}
