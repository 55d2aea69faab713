//! Twilio's delivery reports (`/webhooks/sms/status`).

use super::{param, twiml, verified};
use crate::{error::ApiError, state::AppState};
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, Uri},
    response::Response,
};
use grove_common::{
    db::{
        entities::review_message,
        reviews::{self, lifecycle, message_kind},
        webhook_receipts,
    },
    jobs::{ReviewJob, ReviewStep},
    review::{MessageStatus, ReviewStatus},
    twilio,
};
use sea_orm::{ConnectionTrait, TransactionTrait};
use serde_json::json;

/// Delivery reports only move a message (and its request) forward; duplicates and late reports
/// change nothing. The receipt that dedupes a report and everything the report changes are one
/// transaction: a report that fails half-way leaves no receipt, so Twilio's retry (or the same
/// report posted again) still applies, and one that finds no message yet is not used up.
pub(in crate::routes) async fn status_callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params = verified(&state, &headers, &uri, &body)?;
    let (Some(sid), Some(new_status)) = (
        param(&params, "MessageSid"),
        param(&params, "MessageStatus"),
    ) else {
        return Ok(twiml());
    };
    // A word we do not track (an inbound message's `received`, say) changes nothing.
    let Some(status) = MessageStatus::reported(new_status) else {
        return Ok(twiml());
    };
    let error_code = param(&params, "ErrorCode").and_then(|c| c.parse::<i32>().ok());
    let now = state.clock.now();
    let txn = state.db.begin().await?;
    // The same report twice (a retry or a replay) is applied once.
    if !webhook_receipts::first_time(&txn, &format!("st:{sid}:{new_status}"), now).await? {
        return Ok(twiml());
    }
    let report = Report {
        sid,
        new_status: status,
        error_code,
        now,
    };
    match apply_status(&txn, &report, &uri).await? {
        Applied::Nothing => {
            // Dropping the transaction rolls the receipt back: nothing was used up.
            Ok(twiml())
        }
        Applied::Done { follow_up } => {
            txn.commit().await?;
            if let Some((review_id, due)) = follow_up {
                // The fast path: a delayed job (Redis); the sweeper catches it otherwise.
                let delay = (due - now).to_std().unwrap_or_default();
                let job = ReviewJob {
                    review_id,
                    step: ReviewStep::FollowUp,
                    request_id: crate::request_id::current(),
                };
                if let Err(e) = state.queue.push_review(job, Some(delay)).await {
                    tracing::warn!(error = %e, "could not schedule the follow-up job; the sweeper will");
                }
            }
            Ok(twiml())
        }
    }
}

/// One status report, as Twilio posted it.
struct Report<'a> {
    sid: &'a str,
    new_status: MessageStatus,
    error_code: Option<i32>,
    now: chrono::DateTime<chrono::Utc>,
}

/// What a report changed.
enum Applied {
    /// No message of ours, or nothing new: keep no receipt.
    Nothing,
    /// Applied; a delivery of a first message may have scheduled the follow-up (request, due).
    Done {
        follow_up: Option<(String, chrono::DateTime<chrono::Utc>)>,
    },
}

/// Applies a status report inside the caller's transaction.
async fn apply_status(
    db: &impl ConnectionTrait,
    report: &Report<'_>,
    uri: &Uri,
) -> Result<Applied, sea_orm::DbErr> {
    let Report {
        sid,
        new_status,
        error_code,
        now,
    } = *report;
    let Some(msg) = reported_message(db, sid, uri).await? else {
        return Ok(Applied::Nothing);
    };
    let outcome_was_unknown = msg.status == MessageStatus::Unknown;
    let Some(msg) = apply_report(db, msg, new_status, sid, error_code, now).await? else {
        return Ok(Applied::Nothing);
    };
    let Some(req) = reviews::load(db, &msg.request_id).await? else {
        return Ok(Applied::Done { follow_up: None });
    };
    let detail =
        json!({"message": msg.id, "provider_status": new_status, "error_code": error_code});
    let initial = msg.kind == message_kind::INITIAL;
    if outcome_was_unknown {
        // The run that sent it did not learn whether Twilio took it (it died mid-call, or Twilio
        // answered a 5xx or not at all), and the request ended `failed` rather than risk a
        // second text. Its history now shows what became of the message; a first message that
        // did go out resumes the request where the send would have left it, and the report
        // below then moves it on (a delivery schedules the follow-up).
        reviews::event(
            db,
            &req.id,
            "provider_reported_after_unknown",
            detail.clone(),
            now,
        )
        .await?;
        if initial && matches!(new_status, MessageStatus::Sent | MessageStatus::Delivered) {
            lifecycle::resume_after_unknown_send(db, &req.id, detail.clone(), now).await?;
        }
    }
    let mut follow_up = None;
    match new_status {
        MessageStatus::Sent if initial => {
            lifecycle::advance(db, &req.id, ReviewStatus::Sent, detail, now).await?;
        }
        MessageStatus::Delivered if initial => {
            if lifecycle::advance(db, &req.id, ReviewStatus::Delivered, detail, now).await?
                && let Some(req) = reviews::load(db, &req.id).await?
                && let Some(due) = lifecycle::on_initial_delivered(db, &req, now, now).await?
            {
                follow_up = Some((req.id.clone(), due));
            }
        }
        MessageStatus::Delivered => {
            lifecycle::advance(db, &req.id, ReviewStatus::Completed, detail, now).await?;
        }
        MessageStatus::Undelivered | MessageStatus::Failed
            if error_code == Some(twilio::OPTED_OUT_ERROR) =>
        {
            lifecycle::opt_out(db, &req.phone, lifecycle::PROVIDER_OPT_OUT, detail, now).await?;
        }
        MessageStatus::Undelivered | MessageStatus::Failed => {
            // A first message that did not arrive fails the request; a reminder that did not
            // arrive leaves it complete.
            let to = if initial {
                ReviewStatus::Failed
            } else {
                ReviewStatus::Completed
            };
            lifecycle::advance(db, &req.id, to, detail, now).await?;
        }
        _ => {}
    }
    Ok(Applied::Done { follow_up })
}

/// The message a status report is about: by Twilio's sid, or by the message id in the signed
/// callback URL when Twilio reports before we stored its sid, or after a run died mid-call.
async fn reported_message(
    db: &impl ConnectionTrait,
    sid: &str,
    uri: &Uri,
) -> Result<Option<review_message::Model>, sea_orm::DbErr> {
    if let Some(msg) = reviews::message_by_provider_id(db, sid).await? {
        return Ok(Some(msg));
    }
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(uri.query().unwrap_or_default()).unwrap_or_default();
    let Some(id) =
        param(&query, reviews::CALLBACK_MESSAGE_PARAM).and_then(|v| uuid::Uuid::parse_str(v).ok())
    else {
        return Ok(None);
    };
    Ok(reviews::message_by_id(db, id)
        .await?
        .filter(|m| m.provider_id.is_none()))
}

/// Applies a report to its message. The sending run may be updating the same row this moment
/// (only one optimistic update wins), so a lost race is retried once on a fresh read; a
/// duplicate or late report changes nothing.
async fn apply_report(
    db: &impl ConnectionTrait,
    msg: review_message::Model,
    new_status: MessageStatus,
    sid: &str,
    error_code: Option<i32>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<review_message::Model>, sea_orm::DbErr> {
    if let Some(updated) =
        reviews::message_status(db, &msg, new_status, Some(sid), error_code, now).await?
    {
        return Ok(Some(updated));
    }
    match reviews::message_by_id(db, msg.id).await? {
        Some(fresh) if fresh.status != msg.status => {
            reviews::message_status(db, &fresh, new_status, Some(sid), error_code, now).await
        }
        _ => Ok(None),
    }
}
