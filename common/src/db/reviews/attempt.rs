//! The at-most-once key of an SMS: its message row, written before the provider is called,
//! and a lease that the sending run renews while the provider call is open. A second run that
//! finds the row leaves a live attempt alone and treats only an abandoned one (its run died
//! mid-call) as an unknown outcome, never sending again.

use super::super::entities::review_message;
use super::message;
use crate::{db::outage, review::MessageStatus};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, SqlErr,
    sea_query::Expr,
};
use serde_json::json;
use std::time::Duration;
use uuid::Uuid;

/// How often a run renews its attempt while the provider call is open.
pub const ATTEMPT_HEARTBEAT: Duration = Duration::from_secs(2);

/// An attempt not renewed for this long belongs to a run that died (five missed renewals).
pub const ATTEMPT_STALE_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// What a send attempt found: a fresh row (go ahead and call the provider), or an earlier
/// attempt (never call again: if it crashed mid-call, the SMS may already be on its way).
pub enum Attempt {
    Fresh(review_message::Model),
    Earlier(review_message::Model),
}

pub struct NewMessage<'a> {
    pub request_id: &'a str,
    pub kind: &'a str,
    pub provider: &'a str,
    pub body: &'a str,
    pub encoding: &'a str,
    pub segments: u32,
}

/// How long a write of an attempt whose answer was lost is sent again through a blip: well
/// inside `ATTEMPT_STALE_AFTER`, so that the row found is still a live attempt to every other
/// run when this one takes it as its own and calls the provider.
const RIDE_OUT: Duration = Duration::from_secs(4);

/// Records the attempt *before* the provider is called; the unique (request, kind) index makes
/// this the at-most-once key for the SMS. A write whose answer was lost is sent again with the
/// same id: a row found with that id, still `attempting`, is this run's own (nothing can have
/// been sent for it, since only this run knows the id and it has not called the provider).
pub async fn begin_attempt(
    db: &impl ConnectionTrait,
    m: NewMessage<'_>,
    at: DateTime<Utc>,
) -> Result<Attempt, DbErr> {
    let id = Uuid::now_v7();
    let row = review_message::ActiveModel {
        id: Set(id),
        request_id: Set(m.request_id.to_owned()),
        kind: Set(m.kind.to_owned()),
        provider: Set(m.provider.to_owned()),
        provider_id: Set(None),
        status: Set(MessageStatus::Attempting),
        status_history: Set(json!([{"status": MessageStatus::Attempting, "at": at}])),
        body: Set(m.body.to_owned()),
        encoding: Set(m.encoding.to_owned()),
        segments: Set(i32::try_from(m.segments).unwrap_or(i32::MAX)),
        error_code: Set(None),
        attempted_at: Set(Some(at)),
        created_at: Set(at),
        updated_at: Set(at),
    };
    let insert = || async {
        match review_message::Entity::insert(row.clone())
            .exec_with_returning(db)
            .await
        {
            Ok(model) => Ok(Some(model)),
            Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let (inserted, maybe_written) = outage::knowing("a send attempt", RIDE_OUT, insert).await?;
    if let Some(model) = inserted {
        return Ok(Attempt::Fresh(model));
    }
    let existing = outage::read_knowing(maybe_written, "a send attempt", RIDE_OUT, || {
        message(db, m.request_id, m.kind)
    })
    .await?
    .ok_or_else(|| DbErr::RecordNotFound(format!("the {} message of {}", m.kind, m.request_id)))?;
    if maybe_written && existing.id == id && existing.status == MessageStatus::Attempting {
        tracing::warn!(message = %id, "the send attempt's answer was lost; it was written, and is this run's");
        return Ok(Attempt::Fresh(existing));
    }
    Ok(Attempt::Earlier(existing))
}

/// Renews a live attempt's lease; a no-op once the provider has answered.
pub async fn touch_attempt(
    db: &impl ConnectionTrait,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    review_message::Entity::update_many()
        .col_expr(review_message::Column::UpdatedAt, Expr::value(at))
        .filter(review_message::Column::Id.eq(id))
        .filter(review_message::Column::Status.eq(MessageStatus::Attempting))
        .exec(db)
        .await?;
    Ok(())
}

/// Claims the row of an earlier try that the provider did not take (`not_sent`) for a new try:
/// back to `attempting`, with a fresh lease, in one statement, so that of two runs only one
/// gets it. `None` when another run claimed it first (or it is not `not_sent`).
pub async fn claim(
    db: &impl ConnectionTrait,
    msg: &review_message::Model,
    at: DateTime<Utc>,
) -> Result<Option<review_message::Model>, DbErr> {
    let mut history = msg.status_history.as_array().cloned().unwrap_or_default();
    history.push(json!({"status": MessageStatus::Attempting, "at": at}));
    let claimed = review_message::Entity::update_many()
        .col_expr(
            review_message::Column::Status,
            Expr::value(MessageStatus::Attempting.as_str()),
        )
        .col_expr(
            review_message::Column::StatusHistory,
            Expr::value(serde_json::Value::Array(history)),
        )
        .col_expr(review_message::Column::AttemptedAt, Expr::value(Some(at)))
        .col_expr(review_message::Column::UpdatedAt, Expr::value(at))
        .filter(review_message::Column::Id.eq(msg.id))
        .filter(review_message::Column::Status.eq(MessageStatus::NotSent))
        .exec(db)
        .await?
        .rows_affected
        == 1;
    if claimed {
        review_message::Entity::find_by_id(msg.id).one(db).await
    } else {
        Ok(None)
    }
}

/// True while another run may still be inside the provider call for `msg`: it is still
/// `attempting` (no provider answer or report yet) and its lease was renewed recently.
pub fn in_flight(msg: &review_message::Model, now: DateTime<Utc>) -> bool {
    msg.status == MessageStatus::Attempting && now - msg.updated_at < ATTEMPT_STALE_AFTER
}

/// The status-callback query parameter that carries our message id, so that a report Twilio
/// sends before we stored its sid (or after a run died mid-call) still finds its message.
pub const CALLBACK_MESSAGE_PARAM: &str = "m";

/// `base` with our message id added to its query.
pub fn callback_url(base: &str, message_id: Uuid) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{CALLBACK_MESSAGE_PARAM}={message_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_urls_carry_the_message_id() {
        let id = Uuid::now_v7();
        let url = callback_url("https://grove.example/webhooks/sms/status", id);
        assert_eq!(
            url,
            format!("https://grove.example/webhooks/sms/status?m={id}")
        );
        let with_query = callback_url("https://grove.example/s?x=1", id);
        assert!(with_query.ends_with(&format!("?x=1&m={id}")));
    }
}
