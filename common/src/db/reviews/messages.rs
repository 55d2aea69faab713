//! The messages of a review request (at most an initial one and a follow-up) and their
//! provider statuses, which only move forward.

use super::{ATTEMPTING, UNKNOWN};
use crate::db::entities::review_message;
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
