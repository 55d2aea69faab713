//! Inbound messages (`/webhooks/sms/inbound`): opt-out, opt-in, help and replies.

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
        reviews::{self, lifecycle},
        webhook_receipts,
    },
    review::keywords::{Keyword, classify, reads_as_opt_out},
};
use sea_orm::{ConnectionTrait, TransactionTrait};
use serde_json::json;

/// STOP and friends (and plain-words revocations) suppress the phone and end its pending
/// requests; START lifts the suppression for future requests; HELP and any other reply are
/// recorded for the business. The receipt that dedupes the message by its `MessageSid` and its
/// effects are one transaction: a failure half-way keeps no receipt, so Twilio's retry of a STOP
/// is still acted on, while a replay of a handled message changes nothing.
pub(in crate::routes) async fn inbound(
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
    let txn = state.db.begin().await?;
    // A replayed inbound message (an old signed STOP re-posted after a START) changes nothing.
    if let Some(sid) = param(&params, "MessageSid")
        && !webhook_receipts::first_time(&txn, &format!("in:{sid}"), now).await?
    {
        return Ok(twiml());
    }
    apply_inbound(&txn, from, text, now).await?;
    txn.commit().await?;
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
    if let Some(reason) = revoked {
        let detail = if keyword == Keyword::OptOut {
            json!({"keyword": text.trim().to_uppercase()})
        } else {
            json!({"reply": text.trim()})
        };
        lifecycle::opt_out(db, from, reason, detail, now).await?;
        tracing::info!(reason, "recipient opted out");
        return Ok(());
    }
    let open = reviews::open_for_phone(db, from).await?;
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
