//! What the provider says about a message: the send's own answer (taken, refused, or lost), a
//! status report (a callback, or a lookup that found the message), a lookup that found nothing,
//! and the silence of a missing delivery report.

use super::{
    Effects, EventKind, LOOK_AGAIN_AFTER, MessageKind, NOT_SENT_AFTER, Refusal, Report,
    ReportSource, Step, customer, done,
    send::{self, end},
    store::{self, Cols, Move},
};
use crate::{
    db::{
        entities::{review_message, review_request},
        reviews::{self, rfc3339},
    },
    review::{MessageStatus, ReviewStatus},
    review_service::OptOutReason,
    twilio,
};
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::{Value, json};
use uuid::Uuid;

/// Request `req`'s message `id`, if it is one of its own.
async fn message_of(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    id: Uuid,
) -> Result<Option<review_message::Model>, DbErr> {
    Ok(reviews::message_by_id(txn, id)
        .await?
        .filter(|m| m.request_id == req.id))
}

/// The provider took the message and named it.
pub(super) async fn accepted(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    id: Uuid,
    provider_id: &str,
    status: MessageStatus,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let Some(m) = message_of(txn, &req, id).await? else {
        return done(Effects::at(req.status));
    };
    let kind = MessageKind::parse(&m.kind);
    match m.status {
        MessageStatus::Attempting
            if reviews::message_status(txn, &m, status, Some(provider_id), None, now)
                .await?
                .is_none() =>
        {
            return Ok(Step::Raced);
        }
        // The answer came after the send was given up for unknown (its lease lapsed): it is
        // the provider's word on the message, like a report.
        MessageStatus::Unknown => {
            let report = Report {
                message: id,
                provider_id: provider_id.to_owned(),
                status,
                error_code: None,
                source: ReportSource::Answer,
            };
            return reported(txn, req, &report, now).await;
        }
        // A report overtook the answer and moved the message (and the request) already.
        _ => {}
    }
    if req.status != kind.pending() {
        return done(Effects {
            changed: true,
            ..Effects::at(req.status)
        });
    }
    let detail = json!({"message": m.id, "provider_id": provider_id});
    let to = kind.sent();
    if !store::move_to(txn, &req.id, Move::new(&[req.status], to, detail), now).await? {
        return Ok(Step::Raced);
    }
    done(Effects {
        changed: true,
        ..Effects::at(to)
    })
}

/// The provider certainly did not take the message.
pub(super) async fn refused(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    id: Uuid,
    refusal: Refusal,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let Some(m) = message_of(txn, &req, id).await? else {
        return done(Effects::at(req.status));
    };
    if m.status != MessageStatus::Attempting {
        // Something else decided about this try already (a report, or another run).
        return done(Effects::at(req.status));
    }
    let kind = MessageKind::parse(&m.kind);
    let (status, code) = match refusal {
        Refusal::OptedOut { code } => (MessageStatus::Failed, Some(code)),
        Refusal::Rejected { code } => (MessageStatus::Failed, code),
        Refusal::Unavailable { code } => (MessageStatus::NotSent, code),
    };
    let Some(m) = reviews::message_status(txn, &m, status, None, code, now).await? else {
        return Ok(Step::Raced);
    };
    match refusal {
        Refusal::OptedOut { code } => {
            let detail = json!({"reason": "provider_opted_out", "code": code});
            customer::opt_out_all(txn, &req.phone, OptOutReason::Provider, &detail, now).await?;
            done(Effects {
                changed: true,
                ..Effects::at(ReviewStatus::OptedOut)
            })
        }
        Refusal::Rejected { code } => {
            tracing::warn!(message = %m.id, code, "SMS send refused");
            let detail = json!({"reason": "provider_error", "code": code});
            if req.status != kind.pending() {
                return done(Effects::at(req.status));
            }
            end(txn, &req, kind.not_sent(), detail, true, now).await
        }
        Refusal::Unavailable { .. } => {
            if req.status != kind.pending() {
                return done(Effects::at(req.status));
            }
            send::postpone(txn, &req, &m, kind, now).await
        }
    }
}

/// The send's answer was lost or said nothing: the text may have gone.
pub(super) async fn unknown(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    id: Uuid,
    code: Option<i32>,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let Some(m) = message_of(txn, &req, id).await? else {
        return done(Effects::at(req.status));
    };
    if m.status != MessageStatus::Attempting {
        // A report landed while the call was open: it has moved the message, and decides.
        return done(Effects::at(req.status));
    }
    let kind = MessageKind::parse(&m.kind);
    send::outcome_unknown(txn, &req, &m, kind, code, now).await
}

/// What the provider said became of a message. Only moves forward: a duplicate or late report
/// changes nothing (`changed: false`). A send whose outcome was unknown (its request
/// `unconfirmed`, or `failed` by a lookup that found nothing, or by an older release) resumes
/// where the send would have left it when the provider has the message.
pub(super) async fn reported(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    report: &Report,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let Some(m) = message_of(txn, &req, report.message).await? else {
        return done(Effects::default());
    };
    let kind = MessageKind::parse(&m.kind);
    let was_unknown = m.status == MessageStatus::Unknown
        || reviews::history(&m).any(|(s, _)| s == MessageStatus::Unknown.as_str());
    let (new, pid, code) = (report.status, &report.provider_id, report.error_code);
    if reviews::message_status(txn, &m, new, Some(pid), code, now)
        .await?
        .is_none()
    {
        // A duplicate or late report; or the sending run moved the row this moment, and the
        // report is decided again on what it left.
        let fresh = reviews::message_by_id(txn, m.id).await?;
        if fresh.is_some_and(|f| f.status != m.status) {
            return Ok(Step::Raced);
        }
        return done(Effects::at(req.status));
    }
    let mut detail = json!({"message": m.id, "provider_status": new, "error_code": code});
    if report.source != ReportSource::Callback {
        detail["source"] = json!(report.source);
    }
    let mut status = req.status;
    let mut effects = Effects {
        changed: true,
        ..Effects::default()
    };
    let delivered = matches!(new, MessageStatus::Delivered | MessageStatus::Read);
    let undelivered = matches!(
        new,
        MessageStatus::Failed | MessageStatus::Undelivered | MessageStatus::Canceled
    );
    if was_unknown {
        store::log(
            txn,
            &req.id,
            EventKind::ProviderReportedAfterUnknown,
            detail.clone(),
            now,
        )
        .await?;
        // The text went: the request goes on as if the send had been answered.
        let recover = match kind {
            MessageKind::Initial => {
                matches!(status, ReviewStatus::Unconfirmed | ReviewStatus::Failed)
            }
            MessageKind::FollowUp => status == ReviewStatus::FollowUpUnconfirmed,
        };
        if recover && !undelivered {
            let m = Move::new(&[status], kind.sent(), detail.clone())
                .logged_as(EventKind::SendOutcomeRecovered);
            if !store::move_to(txn, &req.id, m, now).await? {
                return Ok(Step::Raced);
            }
            status = kind.sent();
        }
    }
    if undelivered && code == Some(twilio::OPTED_OUT_ERROR) {
        customer::opt_out_all(txn, &req.phone, OptOutReason::Provider, &detail, now).await?;
        status = ReviewStatus::OptedOut;
    } else if undelivered {
        // A first message that did not arrive fails the request; a reminder that did not arrive
        // leaves it complete.
        let to = kind.not_sent();
        if forward(status, to) {
            if !store::move_to(txn, &req.id, Move::new(&[status], to, detail), now).await? {
                return Ok(Step::Raced);
            }
            status = to;
        }
    } else if kind == MessageKind::FollowUp {
        let to = if delivered {
            ReviewStatus::Completed
        } else {
            ReviewStatus::FollowUpSent
        };
        if forward(status, to) {
            if !store::move_to(txn, &req.id, Move::new(&[status], to, detail), now).await? {
                return Ok(Step::Raced);
            }
            status = to;
        }
    } else if delivered {
        if forward(status, ReviewStatus::Delivered) {
            let m = Move::new(&[status], ReviewStatus::Delivered, detail);
            if !store::move_to(txn, &req.id, m, now).await? {
                return Ok(Step::Raced);
            }
            let (to, due) = after_delivery(txn, &req, ReviewStatus::Delivered, now, now).await?;
            status = to;
            effects.schedule = due.map(|due| (MessageKind::FollowUp.step(), due));
        }
    } else if matches!(status, ReviewStatus::Sending | ReviewStatus::Unconfirmed) {
        // The provider has it (queued, sent): the answer may still be on its way.
        let m = Move::new(&[status], ReviewStatus::Sent, detail);
        if !store::move_to(txn, &req.id, m, now).await? {
            return Ok(Step::Raced);
        }
        status = ReviewStatus::Sent;
    }
    effects.status = Some(status);
    done(effects)
}

/// Reports only move a request forward along the road.
fn forward(from: ReviewStatus, to: ReviewStatus) -> bool {
    ReviewStatus::sources(to).contains(&from)
}

/// After the first message was delivered at `delivered_at` (reported, or assumed after 24 h at
/// `sent`): the follow-up is scheduled `after_hours` later, or the request completes when
/// follow-ups are off or the link was already clicked. The state it moved to, and when the
/// follow-up is due.
async fn after_delivery(
    txn: &impl ConnectionTrait,
    req: &review_request::Model,
    from: ReviewStatus,
    delivered_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(ReviewStatus, Option<DateTime<Utc>>), DbErr> {
    if req.clicked_at.is_some() || !req.follow_up_enabled {
        let reason = if req.clicked_at.is_some() {
            "clicked"
        } else {
            "no_follow_up"
        };
        let m = Move::new(&[from], ReviewStatus::Completed, json!({"reason": reason}));
        let moved = store::move_to(txn, &req.id, m, now).await?;
        return Ok((if moved { ReviewStatus::Completed } else { from }, None));
    }
    let due = delivered_at + TimeDelta::hours(i64::from(req.follow_up_after_hours));
    let m = Move::new(
        &[from],
        ReviewStatus::FollowUpScheduled,
        json!({"due_at": rfc3339(due)}),
    )
    .with(Cols::follow_up_due(due));
    Ok(if store::move_to(txn, &req.id, m, now).await? {
        (ReviewStatus::FollowUpScheduled, Some(due))
    } else {
        (from, None)
    })
}

/// A lookup found no message with this one's text. Before [`NOT_SENT_AFTER`] has passed since
/// the outcome became unknown that proves nothing (the list lags): look again later. After it,
/// nothing went out.
pub(super) async fn nothing_listed(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    let Some(m) = message_of(txn, &req, id).await? else {
        return done(Effects::at(req.status));
    };
    let kind = MessageKind::parse(&m.kind);
    if m.status != MessageStatus::Unknown || req.status != kind.unconfirmed() {
        return done(Effects::at(req.status));
    }
    let unknown_since = reviews::history(&m)
        .filter(|(s, _)| *s == MessageStatus::Unknown.as_str())
        .filter_map(|(_, at)| at)
        .last()
        .unwrap_or(m.updated_at);
    if now < unknown_since + NOT_SENT_AFTER {
        if !store::stay(txn, &req.id, req.status, None, Cols::default(), now).await? {
            return Ok(Step::Raced);
        }
        return done(Effects {
            schedule: Some((kind.step(), now + LOOK_AGAIN_AFTER)),
            ..Effects::at(req.status)
        });
    }
    if reviews::message_status(txn, &m, MessageStatus::Failed, None, None, now)
        .await?
        .is_none()
    {
        return Ok(Step::Raced);
    }
    let mut detail = json!({
        "reason": "not_sent",
        "message": m.id,
        "unknown_since": rfc3339(unknown_since),
    });
    if kind == MessageKind::FollowUp {
        detail["follow_up"] = Value::from("not_sent");
    }
    end(txn, &req, kind.not_sent(), detail, true, now).await
}

/// 24 h at `sent` with no delivery report: go on as if it was delivered when it was sent.
pub(super) async fn overdue(
    txn: &impl ConnectionTrait,
    req: review_request::Model,
    now: DateTime<Utc>,
) -> Result<Step, DbErr> {
    if req.status != ReviewStatus::Sent || req.updated_at > now - TimeDelta::hours(24) {
        return done(Effects::at(req.status));
    }
    let (status, due) = after_delivery(txn, &req, ReviewStatus::Sent, req.updated_at, now).await?;
    if status == ReviewStatus::Sent {
        return Ok(Step::Raced);
    }
    done(Effects {
        changed: true,
        schedule: due.map(|due| (MessageKind::FollowUp.step(), due)),
        ..Effects::at(status)
    })
}
