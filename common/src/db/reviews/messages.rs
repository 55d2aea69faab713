//! The messages of a review request (at most an initial one and a follow-up) and their
//! provider statuses, which only move forward.

use crate::db::entities::review_message;
use crate::review::MessageStatus;
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, sea_query::Expr,
};
use serde_json::{Value, json};
use uuid::Uuid;

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

/// Appends a status to a message if it moves it forward ([`MessageStatus::may_become`]).
/// Returns the updated message, or None for a duplicate or late status.
pub async fn message_status(
    db: &impl ConnectionTrait,
    msg: &review_message::Model,
    new_status: MessageStatus,
    provider_id: Option<&str>,
    error_code: Option<i32>,
    at: DateTime<Utc>,
) -> Result<Option<review_message::Model>, DbErr> {
    // A repeat of the current status (a second sweeper pass marking the same unknown outcome,
    // a duplicate report) records nothing.
    if !msg.status.may_become(new_status, msg.provider_id.is_some()) {
        return Ok(None);
    }
    let mut history = msg.status_history.as_array().cloned().unwrap_or_default();
    let mut entry = json!({"status": new_status, "at": at});
    if let Some(code) = error_code {
        entry["error_code"] = json!(code);
    }
    history.push(entry);
    let updated = review_message::Entity::update_many()
        .col_expr(
            review_message::Column::Status,
            Expr::value(new_status.as_str()),
        )
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
        .filter(review_message::Column::Status.eq(msg.status))
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

/// A message's status history as (status, at) pairs, oldest first.
pub fn history(m: &review_message::Model) -> impl Iterator<Item = (&str, Option<DateTime<Utc>>)> {
    m.status_history
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let status = entry.get("status").and_then(Value::as_str).unwrap_or("");
            let at = entry
                .get("at")
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc));
            (status, at)
        })
}
