//! The paid call's answer: the tracked request as it stands at its first outcome.

use crate::jobs::{Deps, JobError};
use grove_common::review_service;
use grove_common::{
    db::{
        calls,
        reviews::{self, message_kind},
    },
    ledger::{self, CallStatus},
    receipt,
    review::{MessageStatus, ReviewStatus, message},
};

/// Stores the paid call's result the first time the request reaches an outcome the caller can
/// act on (sent, unconfirmed, deferred, scheduled, or refused), and wakes the waiting API.
pub(super) async fn first_outcome(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        return Ok(());
    };
    let Some(call) = calls::load(&deps.db, req.call_id).await? else {
        return Ok(());
    };
    if call.status == CallStatus::Completed {
        return Ok(());
    }
    let msg = reviews::message(&deps.db, &req.id, message_kind::INITIAL).await?;
    // `sending` is no outcome: the run inside the provider call stores the result when the
    // provider answers (or a later run does, once that run's lease has lapsed). Nor is a send
    // postponed because the provider could not take it: the result is stored once the text
    // goes, or once the request fails when its send window closes, so the receipt shows what
    // became of it.
    let postponed = req.status.awaits_first_send()
        && msg
            .as_ref()
            .is_some_and(|m| m.status == MessageStatus::NotSent);
    if req.status == ReviewStatus::Sending || postponed {
        return Ok(());
    }
    let link = grove_common::review::tracked_link(&deps.public_base_url, &req.link_token);
    let preview = message::render(
        req.template.as_deref(),
        &req.first_name,
        &req.business_name,
        &link,
    )
    .ok();
    let (body, encoding, segments) = match &preview {
        Some(r) => (r.body.as_str(), r.encoding.as_str(), r.segments),
        None => ("", "GSM-7", 1),
    };
    let failure = if req.status == ReviewStatus::Failed {
        review_service::failure(&reviews::events(&deps.db, &req.id).await?)
    } else {
        None
    };
    let body = reviews::response_json(
        &req,
        msg.as_ref(),
        (body, encoding, segments),
        &deps.public_base_url,
        receipt::json(&call.receipt_id, call.created_at),
        failure,
    );
    let stored = ledger::Stored {
        body,
        tokens: (0, 0),
        model_calls: 0,
        answer: None,
    };
    let stored = deps
        .runs
        .complete(call.id, calls::Finisher::Unleased, stored)
        .await?;
    match stored {
        Some(result) => deps.completions.completed(call.id, result).await,
        None => deps.completions.notify(call.id).await,
    }
    Ok(())
}
