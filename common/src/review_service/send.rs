//! A message falls due: the first one (`SendDue`) or the reminder (`FollowUpDue`). What an
//! earlier try left in the message row decides first (never send twice); otherwise the guard
//! decides whether the message may go now, later, or never.

use super::{
    Effects, EventKind, LookUp, MessageKind, SEND_WINDOW, SendOrder, Step, done,
    guard::{self, Decision},
    retry_delay,
    store::{self, Cols, Move},
};
use crate::{
    db::{
        entities::{review_message, review_request},
        phone_marks,
        reviews::{self, rfc3339},
    },
    review::{MessageStatus, ReviewStatus},
};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::{Value, json};

pub(super) async fn first_due(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let kind = MessageKind::Initial;
    let msg = reviews::message(txn, &req.id, kind.as_str()).await?;
    match req.status {
        ReviewStatus::Scheduled | ReviewStatus::Deferred if req.send_at <= now => {}
        ReviewStatus::Sending => {}
        ReviewStatus::Unconfirmed => return done(look_again(&req, msg.as_ref())),
        status => return done(Effects::at(status)),
    }
    if let Some(m) = &msg
        && m.status != MessageStatus::NotSent
    {
        return earlier_try(txn, &req, m, kind, now).await;
    }
    if let Some(m) = &msg
        && window_closed(m, now)
    {
        return give_up(txn, &req, m, kind, now).await;
    }
    match guard::at_send_time(txn, &req, now).await? {
        Decision::Refuse { status, reason } => {
            end(txn, &req, status, json!({"reason": reason}), true, now).await
        }
        Decision::Defer { until } => {
            // From `sending` with no try made, this is the one step back on the road: safe,
            // nothing was sent.
            let m = Move::new(&[req.status], ReviewStatus::Deferred, until_detail(until))
                .with(Cols::send_at(until));
            moved(txn, &req, m, now).await
        }
        Decision::Send { validity } => {
            let to_sending = Move::new(&[req.status], ReviewStatus::Sending, json!({}));
            if req.status != ReviewStatus::Sending
                && !store::move_to(txn, &req.id, to_sending, now).await?
            {
                return Ok(Step::Raced);
            }
            go(txn, kind, validity, msg, now).await
        }
    }
}

pub(super) async fn follow_up_due(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let kind = MessageKind::FollowUp;
    let msg = reviews::message(txn, &req.id, kind.as_str()).await?;
    match req.status {
        ReviewStatus::FollowUpScheduled if req.follow_up_due_at.is_some_and(|d| d <= now) => {}
        ReviewStatus::FollowUpUnconfirmed => return done(look_again(&req, msg.as_ref())),
        status => return done(Effects::at(status)),
    }
    if let Some(m) = &msg
        && m.status != MessageStatus::NotSent
    {
        return earlier_try(txn, &req, m, kind, now).await;
    }
    if req.clicked_at.is_some() {
        let detail = json!({"reason": "clicked"});
        return end(txn, &req, ReviewStatus::Completed, detail, false, now).await;
    }
    if let Some(m) = &msg
        && window_closed(m, now)
    {
        return give_up(txn, &req, m, kind, now).await;
    }
    match guard::at_send_time(txn, &req, now).await? {
        Decision::Refuse { status, reason } => {
            // A refused reminder does not undo a delivered request: opted out stays opted out,
            // anything else completes without the reminder.
            let to = if status == ReviewStatus::OptedOut {
                status
            } else {
                ReviewStatus::Completed
            };
            let detail = json!({"reason": reason, "follow_up": "skipped"});
            end(txn, &req, to, detail, false, now).await
        }
        Decision::Defer { until } => {
            let entry = Some((EventKind::FollowUpDeferred, until_detail(until)));
            let cols = Cols::follow_up_due(until);
            if !store::stay(txn, &req.id, req.status, entry, cols, now).await? {
                return Ok(Step::Raced);
            }
            done(Effects {
                changed: true,
                schedule: Some((kind.step(), until)),
                ..Effects::at(req.status)
            })
        }
        Decision::Send { validity } => go(txn, kind, validity, msg, now).await,
    }
}

/// The message could not be rendered: nothing can be sent.
pub(super) async fn cannot_render(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    kind: MessageKind,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    if req.status != kind.pending() {
        return done(Effects::at(req.status));
    }
    let detail = json!({"reason": "message_render_failed"});
    end(txn, &req, kind.not_sent(), detail, true, now).await
}

/// Orders the send; a row the provider did not take before is claimed back for this try.
async fn go(
    txn: &impl ConnectionTrait,
    kind: MessageKind,
    validity: std::time::Duration,
    msg: Option<review_message::Model>,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let claimed = match msg {
        Some(m) => match reviews::claim(txn, &m, now).await? {
            Some(claimed) => Some(claimed),
            None => return Ok(Step::Raced),
        },
        None => None,
    };
    done(Effects {
        changed: true,
        send: Some(SendOrder {
            kind,
            validity,
            claimed,
        }),
        ..Effects::at(kind.pending())
    })
}

/// A row from an earlier try decides: still inside the provider call, or its answer (or its
/// absence) to act on. The provider is never called again for it.
async fn earlier_try(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    m: &review_message::Model,
    kind: MessageKind,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    match m.status {
        MessageStatus::Attempting if reviews::in_flight(m, now) => {
            // A duplicate job (the sweeper, or a redelivery) while the first run is still inside
            // the provider call: that run records the outcome.
            tracing::info!(message = %m.id, "another run is sending this message; leaving it");
            done(Effects::at(req.status))
        }
        // Its run died inside the provider call: the text may be on its way. A second text is
        // worse than none: find out instead.
        MessageStatus::Attempting => outcome_unknown(txn, req, m, kind, None, now).await,
        MessageStatus::Unknown if req.status == kind.pending() => {
            let detail = json!({"reason": "send_outcome_unknown", "message": m.id});
            let to = Move::new(&[req.status], kind.unconfirmed(), detail);
            if !store::move_to(txn, &req.id, to, now).await? {
                return Ok(Step::Raced);
            }
            done(Effects {
                changed: true,
                look_up: Some(look_up(req, m)),
                ..Effects::at(kind.unconfirmed())
            })
        }
        MessageStatus::Unknown | MessageStatus::NotSent => done(Effects::at(req.status)),
        MessageStatus::Failed | MessageStatus::Undelivered | MessageStatus::Canceled => {
            if req.status != kind.pending() {
                return done(Effects::at(req.status));
            }
            let detail = json!({"reason": "provider_error", "code": m.error_code});
            end(
                txn,
                req,
                kind.not_sent(),
                detail,
                m.provider_id.is_none(),
                now,
            )
            .await
        }
        _ => {
            // The provider took it and the run stopped before moving the request.
            if req.status != kind.pending() {
                return done(Effects::at(req.status));
            }
            let detail = json!({"message": m.id, "provider_id": m.provider_id});
            moved(txn, req, Move::new(&[req.status], kind.sent(), detail), now).await
        }
    }
}

/// The send of `m` may or may not have reached the provider: the message is `unknown`, the
/// request waits `unconfirmed`, and the caller looks it up.
pub(super) async fn outcome_unknown(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    m: &review_message::Model,
    kind: MessageKind,
    code: Option<i32>,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    if req.status != kind.pending() {
        // A report landed meanwhile and moved the request: it decides.
        return done(Effects::at(req.status));
    }
    let Some(marked) =
        reviews::message_status(txn, m, MessageStatus::Unknown, None, code, now).await?
    else {
        return Ok(Step::Raced);
    };
    let detail = json!({"reason": "send_outcome_unknown", "message": m.id, "code": code});
    let to = Move::new(&[req.status], kind.unconfirmed(), detail);
    if !store::move_to(txn, &req.id, to, now).await? {
        return Ok(Step::Raced);
    }
    tracing::warn!(message = %m.id, "send outcome unknown; asking the provider");
    done(Effects {
        changed: true,
        look_up: Some(look_up(req, &marked)),
        ..Effects::at(kind.unconfirmed())
    })
}

/// The provider could not take `m` (already `not_sent`): try again later inside the send
/// window, or give up once the next try would fall past it.
pub(super) async fn postpone(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    m: &review_message::Model,
    kind: MessageKind,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let tries = reviews::history(m)
        .filter(|(s, _)| *s == MessageStatus::NotSent.as_str())
        .count();
    let retry_at = now + retry_delay(tries);
    let closes = m.created_at + SEND_WINDOW;
    if retry_at > closes {
        return give_up(txn, req, m, kind, now).await;
    }
    let detail = json!({
        "reason": "provider_unavailable",
        "code": m.error_code,
        "tries": tries,
        "retry_at": rfc3339(retry_at),
        "window_closes_at": rfc3339(closes),
    });
    let written = match kind {
        MessageKind::Initial => {
            let m = Move::new(&[req.status], ReviewStatus::Scheduled, detail)
                .logged_as(EventKind::SendPostponed)
                .with(Cols::send_at(retry_at));
            store::move_to(txn, &req.id, m, now).await?
        }
        MessageKind::FollowUp => {
            let entry = Some((EventKind::FollowUpPostponed, detail));
            store::stay(
                txn,
                &req.id,
                req.status,
                entry,
                Cols::follow_up_due(retry_at),
                now,
            )
            .await?
        }
    };
    if !written {
        return Ok(Step::Raced);
    }
    tracing::warn!(message = %m.id, tries, retry_at = %retry_at, "SMS provider unavailable; send postponed");
    let status = match kind {
        MessageKind::Initial => ReviewStatus::Scheduled,
        MessageKind::FollowUp => req.status,
    };
    done(Effects {
        changed: true,
        schedule: Some((kind.step(), retry_at)),
        ..Effects::at(status)
    })
}

/// The send window closed with the provider still unable to take the message.
async fn give_up(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    m: &review_message::Model,
    kind: MessageKind,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let mut detail = json!({
        "reason": "provider_unavailable",
        "code": m.error_code,
        "first_try_at": rfc3339(m.created_at),
        "window_closed_at": rfc3339(m.created_at + SEND_WINDOW),
    });
    if kind == MessageKind::FollowUp {
        detail["follow_up"] = "not_sent".into();
    }
    end(txn, req, kind.not_sent(), detail, true, now).await
}

/// Ends the request in `to`; `nothing_sent` when no text of it can have reached the recipient,
/// so that a failure or a cancel gives the phone's cooldown mark back.
pub(super) async fn end(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    to: ReviewStatus,
    detail: Value,
    nothing_sent: bool,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    if !store::move_to(txn, &req.id, Move::new(&[req.status], to, detail), now).await? {
        return Ok(Step::Raced);
    }
    // Nothing texted: the phone's cooldown mark, taken when this request was sold, goes back in
    // the transaction that ends it, so exactly once (a second give-back would drop the mark of
    // the sale before) and never lost to a crash between two writes.
    if nothing_sent && matches!(to, ReviewStatus::Failed | ReviewStatus::Cancelled) {
        phone_marks::give_back(txn, req.call_id).await?;
    }
    done(Effects {
        changed: true,
        ..Effects::at(to)
    })
}

async fn moved(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    m: Move,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let to = m.to;
    if !store::move_to(txn, &req.id, m, now).await? {
        return Ok(Step::Raced);
    }
    done(Effects {
        changed: true,
        ..Effects::at(to)
    })
}

/// An unconfirmed send is due to be looked up again.
fn look_again(req: &review_request::Model, msg: Option<&review_message::Model>) -> Effects {
    Effects {
        look_up: msg
            .filter(|m| m.status == MessageStatus::Unknown)
            .map(|m| look_up(req, m)),
        ..Effects::at(req.status)
    }
}

pub(super) fn look_up(req: &review_request::Model, m: &review_message::Model) -> LookUp {
    LookUp {
        message: m.id,
        to: req.phone.clone(),
        body: m.body.clone(),
        since: m.attempted_at.unwrap_or(m.created_at),
    }
}

fn window_closed(m: &review_message::Model, now: DateTime<Utc>) -> bool {
    now >= m.created_at + SEND_WINDOW
}

fn until_detail(until: DateTime<Utc>) -> Value {
    json!({"until": rfc3339(until)})
}
