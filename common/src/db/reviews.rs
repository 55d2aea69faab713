//! Review-request state: forward-only transitions, the event log, messages keyed so that each
//! is sent at most once, and the suppression list (CONTRACT 9).

use super::entities::{review_event, review_message, review_request, suppression};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    sea_query::Expr,
};
use serde_json::{Value, json};
use uuid::Uuid;

mod attempt;
pub use attempt::{
    ATTEMPT_HEARTBEAT, ATTEMPT_STALE_AFTER, ATTEMPTING, Attempt, CALLBACK_MESSAGE_PARAM,
    NewMessage, UNKNOWN, begin_attempt, callback_url, in_flight, touch_attempt,
};

pub mod status {
    pub const SCHEDULED: &str = "scheduled";
    pub const DEFERRED: &str = "deferred_quiet_hours";
    pub const SENDING: &str = "sending";
    pub const SENT: &str = "sent";
    pub const DELIVERED: &str = "delivered";
    pub const FOLLOW_UP_SCHEDULED: &str = "follow_up_scheduled";
    pub const FOLLOW_UP_SENT: &str = "follow_up_sent";
    pub const COMPLETED: &str = "completed";
    pub const OPTED_OUT: &str = "opted_out";
    pub const FAILED: &str = "failed";
    pub const CANCELLED: &str = "cancelled";

    pub const TERMINAL: [&str; 4] = [COMPLETED, OPTED_OUT, FAILED, CANCELLED];

    /// Position on the request's one-way road; terminal states are past every other.
    pub fn rank(s: &str) -> u8 {
        match s {
            SCHEDULED => 0,
            DEFERRED => 1,
            SENDING => 2,
            SENT => 3,
            DELIVERED => 4,
            FOLLOW_UP_SCHEDULED => 5,
            FOLLOW_UP_SENT => 6,
            _ => 100,
        }
    }

    pub fn is_terminal(s: &str) -> bool {
        TERMINAL.contains(&s)
    }

    /// States from which `to` may be entered: every earlier, non-terminal one. Deferral may
    /// repeat (a deferred send can be deferred again), nothing else moves backwards.
    pub fn predecessors(to: &str) -> Vec<&'static str> {
        let all = [
            SCHEDULED,
            DEFERRED,
            SENDING,
            SENT,
            DELIVERED,
            FOLLOW_UP_SCHEDULED,
            FOLLOW_UP_SENT,
        ];
        all.into_iter()
            .filter(|s| rank(s) < rank(to) || (to == DEFERRED && *s == DEFERRED))
            .collect()
    }
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

pub async fn event(
    db: &impl ConnectionTrait,
    request_id: &str,
    kind: &str,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = review_event::ActiveModel {
        id: Set(Uuid::now_v7()),
        request_id: Set(request_id.to_owned()),
        kind: Set(kind.to_owned()),
        detail: Set(detail),
        created_at: Set(at),
    };
    review_event::Entity::insert(row).exec(db).await?;
    Ok(())
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

/// Moves a request forward to `to`, atomically and only from an earlier state; records the event.
/// Returns false (and changes nothing) for a duplicate, late or backward move.
pub async fn advance(
    db: &impl ConnectionTrait,
    id: &str,
    to: &str,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    advance_with(db, id, to, detail, at, |u| u).await
}

/// `advance`, also setting extra columns in the same statement.
pub async fn advance_with(
    db: &impl ConnectionTrait,
    id: &str,
    to: &str,
    detail: Value,
    at: DateTime<Utc>,
    extra: impl FnOnce(
        sea_orm::UpdateMany<review_request::Entity>,
    ) -> sea_orm::UpdateMany<review_request::Entity>,
) -> Result<bool, DbErr> {
    let update = review_request::Entity::update_many()
        .col_expr(review_request::Column::Status, Expr::value(to))
        .col_expr(review_request::Column::UpdatedAt, Expr::value(at))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.is_in(status::predecessors(to)));
    let moved = extra(update).exec(db).await?.rows_affected == 1;
    if moved {
        event(db, id, to, detail, at).await?;
    }
    Ok(moved)
}

pub async fn messages(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<Vec<review_message::Model>, DbErr> {
    review_message::Entity::find()
        .filter(review_message::Column::RequestId.eq(request_id))
        .order_by_asc(review_message::Column::CreatedAt)
        .all(db)
        .await
}

pub async fn message(
    db: &impl ConnectionTrait,
    request_id: &str,
    kind: &str,
) -> Result<Option<review_message::Model>, DbErr> {
    review_message::Entity::find()
        .filter(review_message::Column::RequestId.eq(request_id))
        .filter(review_message::Column::Kind.eq(kind))
        .one(db)
        .await
}

/// Position of a provider message status; statuses only move forward.
pub fn message_rank(s: &str) -> u8 {
    match s {
        ATTEMPTING => 0,
        "accepted" | "scheduled" | "queued" => 1,
        "sending" => 2,
        "sent" => 3,
        "delivered" | "undelivered" | "failed" | "canceled" | UNKNOWN => 4,
        "read" => 5,
        _ => 0,
    }
}

/// Appends a provider status to a message if it moves it forward. Returns the updated message,
/// or None for a duplicate or late status.
pub async fn message_status(
    db: &impl ConnectionTrait,
    msg: &review_message::Model,
    new_status: &str,
    provider_id: Option<&str>,
    error_code: Option<i32>,
    at: DateTime<Utc>,
) -> Result<Option<review_message::Model>, DbErr> {
    // A repeat of the current status (a second sweeper pass marking the same unknown outcome,
    // a duplicate report) records nothing.
    if new_status == msg.status
        || (message_rank(new_status) <= message_rank(&msg.status) && msg.provider_id.is_some())
    {
        return Ok(None);
    }
    let mut history = msg.status_history.as_array().cloned().unwrap_or_default();
    let mut entry = json!({"status": new_status, "at": at});
    if let Some(code) = error_code {
        entry["error_code"] = json!(code);
    }
    history.push(entry);
    let updated = review_message::Entity::update_many()
        .col_expr(review_message::Column::Status, Expr::value(new_status))
        .col_expr(
            review_message::Column::StatusHistory,
            Expr::value(Value::Array(history)),
        )
        .col_expr(
            review_message::Column::ErrorCode,
            Expr::value(error_code.or(msg.error_code)),
        )
        .col_expr(
            review_message::Column::ProviderId,
            Expr::value(
                provider_id
                    .map(str::to_owned)
                    .or_else(|| msg.provider_id.clone()),
            ),
        )
        .col_expr(review_message::Column::UpdatedAt, Expr::value(at))
        .filter(review_message::Column::Id.eq(msg.id))
        // Optimistic check: nobody moved it meanwhile.
        .filter(review_message::Column::Status.eq(msg.status.clone()))
        .exec(db)
        .await?;
    if updated.rows_affected == 1 {
        review_message::Entity::find_by_id(msg.id).one(db).await
    } else {
        Ok(None)
    }
}

pub async fn message_by_id(
    db: &impl ConnectionTrait,
    id: Uuid,
) -> Result<Option<review_message::Model>, DbErr> {
    review_message::Entity::find_by_id(id).one(db).await
}

pub async fn message_by_provider_id(
    db: &impl ConnectionTrait,
    provider_id: &str,
) -> Result<Option<review_message::Model>, DbErr> {
    review_message::Entity::find()
        .filter(review_message::Column::ProviderId.eq(provider_id))
        .one(db)
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
        .filter(review_request::Column::Status.is_not_in(status::TERMINAL))
        .all(db)
        .await
}

/// Whether `phone` got a request created at or after `since` (other than `except`).
pub async fn requested_since(
    db: &impl ConnectionTrait,
    phone: &str,
    since: DateTime<Utc>,
) -> Result<bool, DbErr> {
    Ok(review_request::Entity::find()
        .filter(review_request::Column::Phone.eq(phone))
        .filter(review_request::Column::CreatedAt.gte(since))
        .one(db)
        .await?
        .is_some())
}

/// The tracked-request response (CONTRACT 9), as returned by the paid call and kept as its result.
pub fn response_json(
    req: &review_request::Model,
    message: Option<&review_message::Model>,
    preview: (&str, &str, u32),
    public_base_url: &str,
    receipt: Value,
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
    })
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The initial message was delivered (or has sat at `sent` for 24 h without a report): schedule
/// the follow-up `after_hours` later, or complete the request when follow-ups are off.
/// Returns when the follow-up is due, if one was scheduled.
pub async fn on_initial_delivered(
    db: &impl ConnectionTrait,
    req: &review_request::Model,
    delivered_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    if req.clicked_at.is_some() || !req.follow_up_enabled {
        advance(
            db,
            &req.id,
            status::COMPLETED,
            json!({"reason": if req.clicked_at.is_some() { "clicked" } else { "no_follow_up" }}),
            now,
        )
        .await?;
        return Ok(None);
    }
    let due = delivered_at + chrono::Duration::hours(i64::from(req.follow_up_after_hours));
    let moved = advance_with(
        db,
        &req.id,
        status::FOLLOW_UP_SCHEDULED,
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
/// schedules the follow-up). Returns false when the request is not in that state.
pub async fn resume_after_unknown_send(
    db: &impl ConnectionTrait,
    id: &str,
    detail: Value,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let moved = review_request::Entity::update_many()
        .col_expr(review_request::Column::Status, Expr::value(status::SENT))
        .col_expr(review_request::Column::UpdatedAt, Expr::value(at))
        .filter(review_request::Column::Id.eq(id))
        .filter(review_request::Column::Status.eq(status::FAILED))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if moved {
        event(db, id, "send_outcome_recovered", detail, at).await?;
    }
    Ok(moved)
}

/// Due work for the sweeper: initial sends whose time has come, follow-ups that are due, and
/// requests stuck at `sent` for 24 h without a delivery report.
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
                                .is_in([status::SCHEDULED, status::DEFERRED]),
                        )
                        .add(review_request::Column::SendAt.lte(now)),
                )
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(status::FOLLOW_UP_SCHEDULED))
                        .add(review_request::Column::FollowUpDueAt.lte(now)),
                )
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(status::SENT))
                        .add(review_request::Column::UpdatedAt.lte(stale_sent)),
                )
                // A send whose run may have died mid-call: the job decides from the message's
                // lease whether it is still live.
                .add(
                    Condition::all()
                        .add(review_request::Column::Status.eq(status::SENDING))
                        .add(review_request::Column::UpdatedAt.lte(now - ATTEMPT_STALE_AFTER)),
                ),
        )
        .all(db)
        .await
}
