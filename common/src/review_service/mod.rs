//! The review request's one owner (issue 26; STYLE 9). Whoever learns something about a request
//! (the send and follow-up jobs, the sweeper, the delivery and inbound webhooks, a click, a
//! cancel) parses it into a [`ReviewEvent`] and calls [`apply`]; the service reads the request,
//! decides the transition, writes it with its log entry in one transaction (`store`, the only
//! writer of `review_requests.status` and `review_events`), and answers with the [`Effects`] the
//! caller acts on: send a message, ask the provider what became of one, push a job for later,
//! give the phone's cooldown mark back. The states and every move between them are documented
//! in `docs/review-requests.md`.
//!
//! A send has three outcomes. Sent: the provider's answer moves the request on. Not sent: a
//! refusal for good fails it; the provider unreachable or refusing for now postpones it within
//! its send window ([`SEND_WINDOW`], quiet hours applying), after which it fails. Unknown: the
//! request is `unconfirmed` (never `failed`), and the service asks the provider for the
//! messages sent to the number ([`LookUp`]): found, the request goes on as if the send had been
//! answered (a delivery schedules the follow-up); not listed [`NOT_SENT_AFTER`] after the outcome
//! became unknown, nothing went out and it fails. A status callback counts at any time, even
//! after that.

mod create;
mod customer;
pub mod effects;
pub mod event;
pub mod guard;
mod provider;
mod send;
mod store;

pub use create::create;
pub use customer::{InboundText, inbound, operator_opt_in, operator_opt_out};
pub use effects::{Effects, LookUp, SendOrder};
pub use event::{EventKind, MessageKind, OptOutReason, Refusal, Report, ReportSource, ReviewEvent};

use crate::db::entities::review_request;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionSession, TransactionTrait};
use std::time::Duration;

/// A lookup that finds no message counts as "not sent" only this long after the send's outcome
/// became unknown: Twilio's list can lag behind a create by minutes (twilio/twilio-java#442
/// reports up to 10-15), and a message still queued has no sent date yet.
pub const NOT_SENT_AFTER: TimeDelta = TimeDelta::minutes(15);

pub use crate::db::reviews::LOOK_AGAIN_AFTER;

/// A send the provider could not take is tried again until this long after its first try
/// (quiet hours still apply to each try); then the request fails and says why.
pub const SEND_WINDOW: TimeDelta = TimeDelta::hours(24);

/// The waits between tries of a send the provider could not take: 15 s, doubling, at most 10
/// minutes apart.
fn retry_delay(tries_so_far: usize) -> TimeDelta {
    use backon::BackoffBuilder;
    let delay = backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_secs(15))
        .with_max_delay(Duration::from_secs(600))
        .without_max_times()
        .build()
        .nth(tries_so_far.saturating_sub(1))
        .unwrap_or(Duration::from_secs(600));
    TimeDelta::from_std(delay).unwrap_or(TimeDelta::minutes(10))
}

/// How often a decision is made again after another writer moved the request first.
const RACES: usize = 4;

/// How one decision went: written (commit), or another writer moved the request between the
/// read and the write (roll back, read again, decide again).
enum Step {
    Done(Box<Effects>),
    Raced,
}

fn done(effects: Effects) -> Result<Step, DbErr> {
    Ok(Step::Done(Box::new(effects)))
}

/// Applies `event` to request `id` at `now`: decides the transition from the request as it
/// stands, writes it with its log entry in one transaction (nested in the caller's when `db`
/// is one), and says what to do next. An event that changes nothing (a duplicate, a late
/// report, a request that is gone) answers `changed: false`.
pub async fn apply<C>(
    db: &C,
    id: &str,
    event: ReviewEvent,
    now: DateTime<Utc>,
) -> Result<Effects, DbErr>
where
    C: ConnectionTrait + TransactionTrait,
{
    let mut last = None;
    for _ in 0..RACES {
        let txn = db.begin().await?;
        let Some(req) = store::load(&txn, id).await? else {
            return Ok(Effects::default());
        };
        last = Some(req.status);
        match decide(&txn, req, &event, now).await? {
            Step::Done(effects) => {
                txn.commit().await?;
                return Ok(*effects);
            }
            Step::Raced => txn.rollback().await?,
        }
    }
    tracing::warn!(
        review_id = id,
        ?event,
        "review request kept moving under us; leaving it"
    );
    Ok(Effects {
        status: last,
        ..Effects::default()
    })
}

async fn decide(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    event: &ReviewEvent,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    match event {
        ReviewEvent::SendDue => send::first_due(txn, req, now).await,
        ReviewEvent::FollowUpDue => send::follow_up_due(txn, req, now).await,
        ReviewEvent::CannotRender { kind } => send::cannot_render(txn, req, *kind, now).await,
        ReviewEvent::ProviderAccepted {
            message,
            provider_id,
            status,
        } => provider::accepted(txn, req, *message, provider_id, *status, now).await,
        ReviewEvent::ProviderRefused { message, refusal } => {
            provider::refused(txn, req, *message, *refusal, now).await
        }
        ReviewEvent::OutcomeUnknown { message, code } => {
            provider::unknown(txn, req, *message, *code, now).await
        }
        ReviewEvent::Reported(report) => provider::reported(txn, req, report, now).await,
        ReviewEvent::NothingListed { message } => {
            provider::nothing_listed(txn, req, *message, now).await
        }
        ReviewEvent::DeliveryReportOverdue => provider::overdue(txn, req, now).await,
        ReviewEvent::Replied { help, text } => customer::replied(txn, req, *help, text, now).await,
        ReviewEvent::Clicked => customer::clicked(txn, req, now).await,
        ReviewEvent::Cancelled => customer::cancelled(txn, req, now).await,
    }
}

/// Why a failed request failed, for its caller: the reason its log recorded, in words.
pub fn failure(events: &[crate::db::entities::review_event::Model]) -> Option<serde_json::Value> {
    let entry = events.iter().rev().find(|e| e.kind == EventKind::Failed)?;
    let reason = entry
        .detail
        .get("reason")
        .and_then(|r| r.as_str())
        .unwrap_or("undelivered");
    let code = entry
        .detail
        .get("code")
        .or_else(|| entry.detail.get("error_code"))
        .and_then(serde_json::Value::as_i64);
    let message = match reason {
        "provider_unavailable" => format!(
            "The SMS provider could not be reached, or refused for now, on every try until the \
             send window closed ({} h after the first try): nothing was sent.",
            SEND_WINDOW.num_hours()
        ),
        "not_sent" => "The send's outcome was unknown, and the SMS provider lists no such \
                       message: nothing was sent."
            .into(),
        "provider_error" => "The SMS provider refused the message.".into(),
        "consent_expired" => "The customer's consent was older than 18 months at send time.".into(),
        "invalid_zone_or_phone" => "The recipient's time zone or number could not be used.".into(),
        "message_render_failed" => "The message could not be rendered.".into(),
        "send_outcome_unknown" => "The send's outcome was unknown.".into(),
        _ => "The carrier reported the message undelivered.".into(),
    };
    Some(serde_json::json!({"reason": reason, "code": code, "message": message}))
}

#[cfg(test)]
mod tests;
