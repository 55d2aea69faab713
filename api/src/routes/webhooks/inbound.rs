//! Inbound messages (`/webhooks/sms/inbound`): opt-out, opt-in, help and replies.

use super::{param, twiml, verified};
use crate::{error::ApiError, state::AppState};
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, Uri},
    response::Response,
};
use grove_common::review_service::InboundText;
use grove_common::{
    db::webhook_receipts,
    review::keywords::{Keyword, classify, reads_as_opt_out},
    review_service,
};
use sea_orm::TransactionTrait;

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
    // Nothing it answers needs acting on: a reply or an opt-out sends and schedules nothing.
    review_service::inbound(&txn, from, parse(text), now).await?;
    txn.commit().await?;
    Ok(twiml())
}

/// What the recipient's text means.
fn parse(text: &str) -> InboundText {
    match classify(text) {
        Keyword::OptOut => InboundText::OptOut {
            keyword: text.trim().to_uppercase(),
        },
        // The FCC lets a consumer revoke consent by any reasonable means: plain words count too.
        Keyword::Other if reads_as_opt_out(text) => InboundText::PlainOptOut {
            reply: text.trim().to_owned(),
        },
        Keyword::OptIn => InboundText::OptIn,
        Keyword::Help => InboundText::Help,
        Keyword::Other => InboundText::Reply {
            text: text.trim().to_owned(),
        },
    }
}
