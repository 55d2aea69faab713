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
use sea_orm::{ConnectionTrait, TransactionTrait};
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
/// change nothing. The receipt that dedupes a report and everything the report changes are one
/// transaction: a report that fails half-way leaves no receipt, so Twilio's retry (or the same
/// report posted again) still applies, and one that finds no message yet is not used up.
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
    let txn = state.db.begin().await.map_err(internal)?;
    // The same report twice (a retry or a replay) is applied once.
    if !webhook_receipts::first_time(&txn, &format!("st:{sid}:{new_status}"), now)
        .await
        .map_err(internal)?
    {
        return Ok(twiml());
    }
    let report = Report {
        sid,
        new_status,
        error_code,
        now,
    };
    match apply_status(&txn, &report, &uri).await.map_err(internal)? {
        Applied::Nothing => {
            // Dropping the transaction rolls the receipt back: nothing was used up.
            Ok(twiml())
        }
        Applied::Done { follow_up } => {
            txn.commit().await.map_err(internal)?;
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
    new_status: &'a str,
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
    let outcome_was_unknown = msg.status == reviews::UNKNOWN;
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
        if initial && matches!(new_status, "sent" | "delivered") {
            reviews::resume_after_unknown_send(db, &req.id, detail.clone(), now).await?;
        }
    }
    let mut follow_up = None;
    match new_status {
        "sent" if initial => {
            reviews::advance(db, &req.id, status::SENT, detail, now).await?;
        }
        "delivered" if initial => {
            if reviews::advance(db, &req.id, status::DELIVERED, detail, now).await?
                && let Some(req) = reviews::load(db, &req.id).await?
                && let Some(due) = reviews::on_initial_delivered(db, &req, now, now).await?
            {
                follow_up = Some((req.id.clone(), due));
            }
        }
        "delivered" => {
            reviews::advance(db, &req.id, status::COMPLETED, detail, now).await?;
        }
        "undelivered" | "failed" => {
            if error_code == Some(21610) {
                reviews::set_suppression(db, &req.phone, true, "provider_21610", now).await?;
                reviews::advance(db, &req.id, status::OPTED_OUT, detail, now).await?;
            } else {
                let to = if initial {
                    status::FAILED
                } else {
                    status::COMPLETED
                };
                reviews::advance(db, &req.id, to, detail, now).await?;
            }
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

/// STOP and friends (and plain-words revocations) suppress the phone and end its pending
/// requests; START lifts the suppression for future requests; HELP and any other reply are
/// recorded for the business. The receipt that dedupes the message by its `MessageSid` and its
/// effects are one transaction: a failure half-way keeps no receipt, so Twilio's retry of a STOP
/// is still acted on, while a replay of a handled message changes nothing.
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
    let txn = state.db.begin().await.map_err(internal)?;
    // A replayed inbound message (an old signed STOP re-posted after a START) changes nothing.
    if let Some(sid) = param(&params, "MessageSid")
        && !webhook_receipts::first_time(&txn, &format!("in:{sid}"), now)
            .await
            .map_err(internal)?
    {
        return Ok(twiml());
    }
    apply_inbound(&txn, from, text, now)
        .await
        .map_err(internal)?;
    txn.commit().await.map_err(internal)?;
    Ok(twiml())
}

/// Acts on one inbound message inside the caller's transaction.
async fn apply_inbound(
    db: &impl ConnectionTrait,
    from: &str,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), sea_orm::DbErr> {
    let keyword = classify(text);
    // The FCC lets a consumer revoke consent by any reasonable means: plain words count too.
    let revoked = match keyword {
        Keyword::OptOut => Some("stop_keyword"),
        Keyword::Other if reads_as_opt_out(text) => Some("plain_words_opt_out"),
        _ => None,
    };
    let open = reviews::open_for_phone(db, from).await?;
    if let Some(reason) = revoked {
        reviews::set_suppression(db, from, true, reason, now).await?;
        let detail = if keyword == Keyword::OptOut {
            json!({"keyword": text.trim().to_uppercase()})
        } else {
            json!({"reply": text.trim()})
        };
        for req in open {
            reviews::advance(db, &req.id, status::OPTED_OUT, detail.clone(), now).await?;
        }
        tracing::info!(reason, "recipient opted out");
        return Ok(());
    }
    match keyword {
        Keyword::OptIn => {
            reviews::set_suppression(db, from, false, "start_keyword", now).await?;
        }
        Keyword::Help | Keyword::Other => {
            // HELP, or neither a keyword nor a revocation: kept for the business to read.
            let (event, detail) = if keyword == Keyword::Help {
                ("help_requested", json!({}))
            } else {
                ("reply_received", json!({"reply": text.trim()}))
            };
            for req in open {
                reviews::event(db, &req.id, event, detail.clone(), now).await?;
            }
        }
        Keyword::OptOut => {}
    }
    Ok(())
}
