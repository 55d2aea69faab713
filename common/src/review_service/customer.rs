//! What the customer and the caller do: a click on the tracked link, a cancel, and the texts
//! the recipient sends back (STOP and plain-words revocations, START, HELP, other replies).

use super::{
    Effects, EventKind, MessageKind, ReviewEvent, Step, apply, done,
    send::end,
    store::{self, Move},
};
use crate::{
    db::{entities::review_request, reviews},
    review::{MessageStatus, ReviewStatus},
    review_service::OptOutReason,
};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionSession, TransactionTrait};
use serde_json::{Value, json};

/// An inbound text, as the webhook classified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InboundText {
    /// STOP and its synonyms (the keyword as sent, upper-cased).
    OptOut { keyword: String },
    /// Not a keyword, but plainly a revocation ("please stop texting me"): the FCC lets a
    /// consumer revoke consent by any reasonable means.
    PlainOptOut { reply: String },
    /// START, UNSTOP, YES: lifts the suppression for future requests.
    OptIn,
    /// HELP, INFO: recorded on the open requests.
    Help,
    /// Anything else: kept on the open requests for the business to read.
    Reply { text: String },
}

/// Acts on a text from `phone`, in one transaction (nested in the caller's when `db` is one).
/// Returns what each request it touched is to do next.
pub async fn inbound<C>(
    db: &C,
    phone: &str,
    text: InboundText,
    now: DateTime<Utc>,
) -> Result<Vec<Effects>, DbErr>
where
    C: ConnectionTrait + TransactionTrait,
{
    let txn = db.begin().await?;
    let mut out = Vec::new();
    match text {
        InboundText::OptOut { keyword } => {
            let detail = json!({"keyword": keyword});
            opt_out_all(&txn, phone, OptOutReason::StopKeyword, &detail, now).await?;
        }
        InboundText::PlainOptOut { reply } => {
            let detail = json!({"reply": reply});
            opt_out_all(&txn, phone, OptOutReason::PlainWords, &detail, now).await?;
        }
        InboundText::OptIn => {
            reviews::set_suppression(&txn, phone, false, "start_keyword", now).await?;
        }
        InboundText::Help | InboundText::Reply { .. } => {
            let (help, text) = match text {
                InboundText::Reply { text } => (false, text),
                _ => (true, String::new()),
            };
            for req in reviews::open_for_phone(&txn, phone).await? {
                let event = ReviewEvent::Replied {
                    help,
                    text: text.clone(),
                };
                out.push(apply(&txn, &req.id, event, now).await?);
            }
        }
    }
    txn.commit().await?;
    Ok(out)
}

/// An operator records `phone`'s opt-out, said by the customer through any channel, in one
/// transaction (nested in the caller's when `db` is one): the phone is suppressed, so the next
/// request to it is refused before any payment (`recipient_opted_out`), and every request to it
/// that has not finished ends `opted_out` with `operator` and `reason` in its log. How many
/// requests ended.
pub async fn operator_opt_out<C>(
    db: &C,
    phone: &str,
    operator: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<usize, DbErr>
where
    C: ConnectionTrait + TransactionTrait,
{
    let txn = db.begin().await?;
    let detail = json!({"by": "operator", "operator": operator, "reason": reason});
    let ended = opt_out_all(&txn, phone, OptOutReason::Operator, &detail, now).await?;
    txn.commit().await?;
    Ok(ended)
}

/// An operator lifts `phone`'s suppression (the customer asked to hear from businesses again):
/// future requests to it may be sold. Requests that ended `opted_out` stay ended.
pub async fn operator_opt_in(
    db: &impl ConnectionTrait,
    phone: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    reviews::set_suppression(db, phone, false, "operator_opt_in", now).await
}

/// The recipient opted out: the phone is suppressed for every future request and every request
/// to it that has not finished ends `opted_out`, each with `detail` in its log. How many ended.
pub(super) async fn opt_out_all(
    txn: &impl ConnectionTrait,
    phone: &str,
    reason: OptOutReason,
    detail: &Value,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    reviews::set_suppression(txn, phone, true, reason.as_str(), now).await?;
    let mut ended = 0;
    for req in reviews::open_for_phone(txn, phone).await? {
        let m = Move::new(&[req.status], ReviewStatus::OptedOut, detail.clone());
        if store::move_to(txn, &req.id, m, now).await? {
            ended += 1;
        }
    }
    tracing::info!(reason = reason.as_str(), ended, "recipient opted out");
    Ok(ended)
}

pub(super) async fn replied(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    help: bool,
    text: &str,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let (kind, detail) = if help {
        (EventKind::HelpRequested, json!({}))
    } else {
        (EventKind::ReplyReceived, json!({"reply": text.trim()}))
    };
    store::log(txn, &req.id, kind, detail, now).await?;
    done(Effects {
        changed: true,
        ..Effects::at(req.status)
    })
}

/// A click is the outcome asked for: recorded every time, and the first one completes a request
/// that has been sent (no reminder after it).
pub(super) async fn clicked(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let first = store::click(txn, &req.id, now).await?;
    if first && req.status.completes_on_click() {
        let m = Move::new(
            &[req.status],
            ReviewStatus::Completed,
            json!({"reason": "clicked"}),
        );
        if !store::move_to(txn, &req.id, m, now).await? {
            return Ok(Step::Raced);
        }
        return done(Effects {
            changed: true,
            ..Effects::at(ReviewStatus::Completed)
        });
    }
    done(Effects {
        changed: first,
        ..Effects::at(req.status)
    })
}

/// The caller cancels: any request that has not finished ends; nothing more is sent.
pub(super) async fn cancelled(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    if req.status.is_terminal() {
        return done(Effects::at(req.status));
    }
    let first = reviews::message(txn, &req.id, MessageKind::Initial.as_str()).await?;
    // No text can have reached the recipient: no first message yet, or one the provider never
    // took (refused, or not taken for now) and whose outcome was never in doubt.
    let nothing_sent = first.is_none_or(|m| {
        matches!(m.status, MessageStatus::NotSent | MessageStatus::Failed)
            && m.provider_id.is_none()
            && !reviews::history(&m).any(|(s, _)| s == MessageStatus::Unknown.as_str())
    });
    end(
        txn,
        &req,
        ReviewStatus::Cancelled,
        json!({"by": "caller"}),
        nothing_sent,
        now,
    )
    .await
}
