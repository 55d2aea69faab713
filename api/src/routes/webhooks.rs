//! Twilio webhooks: delivery reports and inbound messages. Each verifies `X-Twilio-Signature`
//! against the configured public URL (never the request's Host), in constant time, and answers
//! 403 without touching anything when it does not match.

use crate::{error::ApiError, state::AppState};
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, Uri, header},
    response::{IntoResponse, Response},
};
use grove_common::{
    db::{
        entities::review_message,
        reviews::{self, message_kind, status},
        webhook_receipts,
    },
    jobs::{ReviewJob, ReviewStep},
    review::keywords::{Keyword, classify, reads_as_opt_out},
    twilio,
};
use serde_json::json;

fn internal(e: sea_orm::DbErr) -> ApiError {
    ApiError::Internal(e.to_string())
}

/// Parses and authenticates a Twilio form post.
fn verified(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
    body: &Bytes,
) -> Result<Vec<(String, String)>, ApiError> {
    let Some(token) = state
        .config
        .twilio
        .as_ref()
        .map(|t| t.auth_token.expose().to_owned())
    else {
        // The outbox sends nothing, so nothing can legitimately report on it.
        return Err(ApiError::Forbidden);
    };
    let params: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|_| ApiError::Forbidden)?;
    let signature = headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut url = state.config.absolute(uri.path());
    if let Some(q) = uri.query() {
        url.push('?');
        url.push_str(q);
    }
    if signature.is_empty() || !twilio::verify(&token, &url, &params, signature) {
        tracing::warn!(path = uri.path(), "webhook signature mismatch");
        return Err(ApiError::Forbidden);
    }
    Ok(params)
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn twiml() -> Response {
    (
        [(header::CONTENT_TYPE, "text/xml")],
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>",
    )
        .into_response()
}

/// Delivery reports only move a message (and its request) forward; duplicates and late reports
/// change nothing.
pub(super) async fn status_callback(
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
    let error_code = param(&params, "ErrorCode").and_then(|c| c.parse::<i32>().ok());
    let now = state.clock.now();
    // The same report twice (a retry or a replay) is applied once.
    if !webhook_receipts::first_time(&state.db, &format!("st:{sid}:{new_status}"), now)
        .await
        .map_err(internal)?
    {
        return Ok(twiml());
    }
    let Some(msg) = reported_message(&state, sid, &uri).await? else {
        return Ok(twiml());
    };
    let outcome_was_unknown = msg.status == reviews::UNKNOWN;
    let Some(msg) = apply_report(&state.db, msg, new_status, sid, error_code, now)
        .await
        .map_err(internal)?
    else {
        return Ok(twiml());
    };
    let Some(req) = reviews::load(&state.db, &msg.request_id)
        .await
        .map_err(internal)?
    else {
        return Ok(twiml());
    };
    let detail =
        json!({"message": msg.id, "provider_status": new_status, "error_code": error_code});
    let initial = msg.kind == message_kind::INITIAL;
    if outcome_was_unknown {
        // The run that sent it died before Twilio answered, and the request ended `failed`
        // rather than risk a second text. Its history now shows what became of the message;
        // a first message that did go out resumes the request where the send would have left
        // it, and the report below then moves it on (a delivery schedules the follow-up).
        reviews::event(
            &state.db,
            &req.id,
            "provider_reported_after_unknown",
            detail.clone(),
            now,
        )
        .await
        .map_err(internal)?;
        if initial && matches!(new_status, "sent" | "delivered") {
            reviews::resume_after_unknown_send(&state.db, &req.id, detail.clone(), now)
                .await
                .map_err(internal)?;
        }
    }
    match new_status {
        "sent" if initial => {
            reviews::advance(&state.db, &req.id, status::SENT, detail, now)
                .await
                .map_err(internal)?;
        }
        "delivered" if initial => {
            if reviews::advance(&state.db, &req.id, status::DELIVERED, detail, now)
                .await
                .map_err(internal)?
                && let Some(req) = reviews::load(&state.db, &req.id).await.map_err(internal)?
                && let Some(due) = reviews::on_initial_delivered(&state.db, &req, now, now)
                    .await
                    .map_err(internal)?
            {
                // The fast path: a delayed job (Redis); the sweeper catches it otherwise.
                let delay = (due - now).to_std().unwrap_or_default();
                let job = ReviewJob {
                    review_id: req.id.clone(),
                    step: ReviewStep::FollowUp,
                    request_id: crate::request_id::current(),
                };
                if let Err(e) = state.queue.push_review(job, Some(delay)).await {
                    tracing::warn!(error = %e, "could not schedule the follow-up job; the sweeper will");
                }
            }
        }
        "delivered" => {
            reviews::advance(&state.db, &req.id, status::COMPLETED, detail, now)
                .await
                .map_err(internal)?;
        }
        "undelivered" | "failed" => {
            if error_code == Some(21610) {
                reviews::set_suppression(&state.db, &req.phone, true, "provider_21610", now)
                    .await
                    .map_err(internal)?;
                reviews::advance(&state.db, &req.id, status::OPTED_OUT, detail, now)
                    .await
                    .map_err(internal)?;
            } else {
                let to = if initial {
                    status::FAILED
                } else {
                    status::COMPLETED
                };
                reviews::advance(&state.db, &req.id, to, detail, now)
                    .await
                    .map_err(internal)?;
            }
        }
        _ => {}
    }
    Ok(twiml())
}

/// The message a status report is about: by Twilio's sid, or by the message id in the signed
/// callback URL when Twilio reports before we stored its sid, or after a run died mid-call.
async fn reported_message(
    state: &AppState,
    sid: &str,
    uri: &Uri,
) -> Result<Option<review_message::Model>, ApiError> {
    if let Some(msg) = reviews::message_by_provider_id(&state.db, sid)
        .await
        .map_err(internal)?
    {
        return Ok(Some(msg));
    }
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(uri.query().unwrap_or_default()).unwrap_or_default();
    let Some(id) =
        param(&query, reviews::CALLBACK_MESSAGE_PARAM).and_then(|v| uuid::Uuid::parse_str(v).ok())
    else {
        return Ok(None);
    };
    Ok(reviews::message_by_id(&state.db, id)
        .await
        .map_err(internal)?
        .filter(|m| m.provider_id.is_none()))
}

/// Applies a report to its message. The sending run may be updating the same row this moment
/// (only one optimistic update wins), so a lost race is retried once on a fresh read; a
/// duplicate or late report changes nothing.
async fn apply_report(
    db: &sea_orm::DatabaseConnection,
    msg: review_message::Model,
    new_status: &str,
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

/// STOP and friends suppress the phone and end its pending requests; START lifts the
/// suppression for future requests; HELP is recorded.
pub(super) async fn inbound(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params = verified(&state, &headers, &uri, &body)?;
    let (Some(from), Some(text)) = (param(&params, "From"), param(&params, "Body")) else {
        return Ok(twiml());
    };
    let now = state.clock.now();
    // A replayed inbound message (an old signed STOP re-posted after a START) changes nothing.
    if let Some(sid) = param(&params, "MessageSid")
        && !webhook_receipts::first_time(&state.db, &format!("in:{sid}"), now)
            .await
            .map_err(internal)?
    {
        return Ok(twiml());
    }
    let keyword = classify(text);
    // The FCC lets a consumer revoke consent by any reasonable means: plain words count too.
    let revoked = match keyword {
        Keyword::OptOut => Some("stop_keyword"),
        Keyword::Other if reads_as_opt_out(text) => Some("plain_words_opt_out"),
        _ => None,
    };
    let open = reviews::open_for_phone(&state.db, from)
        .await
        .map_err(internal)?;
    if let Some(reason) = revoked {
        reviews::set_suppression(&state.db, from, true, reason, now)
            .await
            .map_err(internal)?;
        let detail = if keyword == Keyword::OptOut {
            json!({"keyword": text.trim().to_uppercase()})
        } else {
            json!({"reply": text.trim()})
        };
        for req in open {
            reviews::advance(&state.db, &req.id, status::OPTED_OUT, detail.clone(), now)
                .await
                .map_err(internal)?;
        }
        tracing::info!(reason, "recipient opted out");
        return Ok(twiml());
    }
    match keyword {
        Keyword::OptIn => {
            reviews::set_suppression(&state.db, from, false, "start_keyword", now)
                .await
                .map_err(internal)?;
        }
        Keyword::Help | Keyword::Other => {
            // HELP, or neither a keyword nor a revocation: kept for the business to read.
            let (event, detail) = if keyword == Keyword::Help {
                ("help_requested", json!({}))
            } else {
                ("reply_received", json!({"reply": text.trim()}))
            };
            for req in open {
                reviews::event(&state.db, &req.id, event, detail.clone(), now)
                    .await
                    .map_err(internal)?;
            }
        }
        Keyword::OptOut => {}
    }
    Ok(twiml())
}
