//! Twilio's delivery reports (`/webhooks/sms/status`): parse → apply → act.

use super::{param, twiml, verified};
use crate::{error::ApiError, review::act, state::AppState};
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, Uri},
    response::Response,
};
use grove_common::review_service::{self, Report, ReportSource, ReviewEvent};
use grove_common::{
    db::{entities::review_message, reviews, webhook_receipts},
    review::MessageStatus,
};
use sea_orm::{ConnectionTrait, TransactionTrait};

/// A report is applied by the review service, which only moves a message (and its request)
/// forward; duplicates and late reports change nothing. The receipt that dedupes a report and
/// everything the report changes are one transaction: a report that fails half-way leaves no
/// receipt, so Twilio's retry (or the same report posted again) still applies, and one that
/// finds no message yet, or changes nothing, is not used up.
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
    let Some(msg) = reported_message(&txn, sid, &uri).await? else {
        // Dropping the transaction rolls the receipt back: nothing was used up.
        return Ok(twiml());
    };
    // Counted once per report (the receipt dedupes), from the parsed values only: the
    // signature proves Twilio sent them, and both come from short fixed sets.
    let code = error_code.map(|c| c.to_string());
    state.metrics.sms_status(status.as_str(), code.as_deref());
    let report = ReviewEvent::Reported(Report {
        message: msg.id,
        provider_id: sid.to_owned(),
        status,
        error_code,
        source: ReportSource::Callback,
    });
    let effects = review_service::apply(&txn, &msg.request_id, report, now).await?;
    if !effects.changed {
        return Ok(twiml());
    }
    txn.commit().await?;
    act(&state, &msg.request_id, &effects).await?;
    Ok(twiml())
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
