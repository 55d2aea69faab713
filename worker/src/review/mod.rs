//! Review-request jobs: the first send (or its deferral), the follow-up, and the sweeper that
//! picks up anything due that a lost job missed. Every SMS is keyed by its message row, which
//! exists before the provider is called, so a re-run never sends twice.

mod failure;
pub mod guard;
pub mod sweep;

use crate::{
    jobs::{Deps, JobError},
    sms::{OutgoingSms, SentSms, SmsError},
};
use apalis::prelude::Data;
use grove_common::{
    db::{
        calls,
        entities::{consent, review_request},
        reviews::{self, Attempt, NewMessage, message_kind, status},
    },
    jobs::{ReviewJob, ReviewStep},
    receipt,
    review::message,
};
use guard::Decision;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use std::sync::Arc;
use tracing::Instrument;

pub async fn review_job(job: ReviewJob, deps: Data<Arc<Deps>>) -> Result<(), JobError> {
    let deps: Arc<Deps> = Arc::clone(&deps);
    crate::jobs::detached(async move { handle(&deps, &job).await }).await
}

/// Runs one review job. Safe to run more than once, and twice at the same moment.
pub async fn handle(deps: &Deps, job: &ReviewJob) -> Result<(), JobError> {
    let span = tracing::info_span!("job.review", review_id = %job.review_id, step = ?job.step, request_id = %job.request_id);
    async move {
        match job.step {
            ReviewStep::Send => send_initial(deps, &job.review_id).await,
            ReviewStep::FollowUp => send_follow_up(deps, &job.review_id).await,
        }
    }
    .instrument(span)
    .await
}

async fn send_initial(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        tracing::warn!("job for an unknown review request; dropping it");
        return Ok(());
    };
    let now = deps.clock.now();
    if (req.status == status::SCHEDULED || req.status == status::DEFERRED) && req.send_at <= now {
        let consent = consent::Entity::find_by_id(req.consent_id)
            .one(&deps.db)
            .await?;
        match guard::check(&deps.db, &req, consent.as_ref(), now).await? {
            Decision::Refuse { status: to, reason } => {
                reviews::advance(&deps.db, &req.id, to, json!({"reason": reason}), now).await?;
            }
            Decision::Defer { until } => {
                reviews::advance_with(
                    &deps.db,
                    &req.id,
                    status::DEFERRED,
                    json!({"until": reviews::rfc3339(until)}),
                    now,
                    |u| {
                        u.col_expr(
                            review_request::Column::SendAt,
                            sea_orm::sea_query::Expr::value(until),
                        )
                    },
                )
                .await?;
            }
            Decision::Send { validity } => {
                if reviews::advance(&deps.db, &req.id, status::SENDING, json!({}), now).await? {
                    deliver(deps, &req, message_kind::INITIAL, validity).await?;
                }
            }
        }
    } else if req.status == status::SENDING {
        // A run that crashed between marking and finishing: the message row decides. With no
        // row, nothing was attempted, so this is a first send and passes the guard like one.
        let attempted = reviews::message(&deps.db, &req.id, message_kind::INITIAL)
            .await?
            .is_some();
        let validity = if attempted {
            Some(std::time::Duration::from_secs(3600))
        } else {
            guarded_resume(deps, &req, now).await?
        };
        if let Some(validity) = validity {
            deliver(deps, &req, message_kind::INITIAL, validity).await?;
        }
    }
    first_outcome(deps, review_id).await
}

/// The send-time guard for a request found at `sending` with no attempt recorded: `Some` when it
/// may be sent now; otherwise the request is refused or moved back to `deferred` (safe: no
/// message exists) and `None`.
async fn guarded_resume(
    deps: &Deps,
    req: &review_request::Model,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<std::time::Duration>, JobError> {
    let consent = consent::Entity::find_by_id(req.consent_id)
        .one(&deps.db)
        .await?;
    Ok(
        match guard::check(&deps.db, req, consent.as_ref(), now).await? {
            Decision::Send { validity } => Some(validity),
            Decision::Refuse { status: to, reason } => {
                reviews::advance(&deps.db, &req.id, to, json!({"reason": reason}), now).await?;
                None
            }
            Decision::Defer { until } => {
                use sea_orm::{ColumnTrait, QueryFilter, sea_query::Expr};
                let moved = review_request::Entity::update_many()
                    .col_expr(
                        review_request::Column::Status,
                        Expr::value(status::DEFERRED),
                    )
                    .col_expr(review_request::Column::SendAt, Expr::value(until))
                    .col_expr(review_request::Column::UpdatedAt, Expr::value(now))
                    .filter(review_request::Column::Id.eq(req.id.as_str()))
                    .filter(review_request::Column::Status.eq(status::SENDING))
                    .exec(&deps.db)
                    .await?;
                if moved.rows_affected == 1 {
                    reviews::event(
                        &deps.db,
                        &req.id,
                        status::DEFERRED,
                        json!({"until": reviews::rfc3339(until)}),
                        now,
                    )
                    .await?;
                }
                None
            }
        },
    )
}

async fn send_follow_up(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        return Ok(());
    };
    let now = deps.clock.now();
    if req.status != status::FOLLOW_UP_SCHEDULED || req.follow_up_due_at.is_none_or(|due| due > now)
    {
        return Ok(());
    }
    if req.clicked_at.is_some() {
        reviews::advance(
            &deps.db,
            &req.id,
            status::COMPLETED,
            json!({"reason": "clicked"}),
            now,
        )
        .await?;
        return Ok(());
    }
    let consent = consent::Entity::find_by_id(req.consent_id)
        .one(&deps.db)
        .await?;
    match guard::check(&deps.db, &req, consent.as_ref(), now).await? {
        Decision::Refuse { status: to, reason } => {
            // A refused reminder does not undo a delivered request: opted out stays opted out,
            // anything else completes without the reminder.
            let to = if to == status::OPTED_OUT {
                to
            } else {
                status::COMPLETED
            };
            reviews::advance(
                &deps.db,
                &req.id,
                to,
                json!({"reason": reason, "follow_up": "skipped"}),
                now,
            )
            .await?;
        }
        Decision::Defer { until } => {
            review_request::Entity::update_many()
                .col_expr(
                    review_request::Column::FollowUpDueAt,
                    sea_orm::sea_query::Expr::value(Some(until)),
                )
                .filter(review_request::Column::Id.eq(req.id.clone()))
                .exec(&deps.db)
                .await?;
            reviews::event(
                &deps.db,
                &req.id,
                "follow_up_deferred_quiet_hours",
                json!({"until": reviews::rfc3339(until)}),
                now,
            )
            .await?;
        }
        Decision::Send { validity } => {
            deliver(deps, &req, message_kind::FOLLOW_UP, validity).await?
        }
    }
    Ok(())
}

/// Sends one message at most once: record the attempt, then call the provider.
async fn deliver(
    deps: &Deps,
    req: &review_request::Model,
    kind: &str,
    validity: std::time::Duration,
) -> Result<(), JobError> {
    let link = grove_common::review::tracked_link(&deps.public_base_url, &req.link_token);
    let rendered = if kind == message_kind::INITIAL {
        message::render(
            req.template.as_deref(),
            &req.first_name,
            &req.business_name,
            &link,
        )
    } else {
        Ok(message::render_follow_up(
            &req.first_name,
            &req.business_name,
            &link,
        ))
    };
    let now = deps.clock.now();
    let (sent_status, after_failure) = if kind == message_kind::INITIAL {
        (status::SENT, status::FAILED)
    } else {
        (status::FOLLOW_UP_SENT, status::COMPLETED)
    };
    let Ok(rendered) = rendered else {
        reviews::advance(
            &deps.db,
            &req.id,
            after_failure,
            json!({"reason": "message_render_failed"}),
            now,
        )
        .await?;
        return Ok(());
    };
    let encoding = rendered.encoding.as_str();
    let attempt = reviews::begin_attempt(
        &deps.db,
        NewMessage {
            request_id: &req.id,
            kind,
            provider: deps.sms.name(),
            body: &rendered.body,
            encoding,
            segments: rendered.segments,
        },
        now,
    )
    .await?;
    let msg = match attempt {
        Attempt::Fresh(msg) => msg,
        Attempt::Earlier(msg) => {
            if reviews::in_flight(&msg, now) {
                // A duplicate job (the sweeper, or a redelivery) while the first run is still
                // inside the provider call: that run records the outcome.
                tracing::info!(message = %msg.id, "another run is sending this message; leaving it");
                return Ok(());
            }
            if msg.provider_id.is_some() {
                reviews::advance(
                    &deps.db,
                    &req.id,
                    sent_status,
                    json!({"message": msg.id}),
                    now,
                )
                .await?;
            } else if msg.status == reviews::UNKNOWN
                || reviews::message_status(&deps.db, &msg, reviews::UNKNOWN, None, None, now)
                    .await?
                    .is_some()
            {
                // The earlier run may have reached the provider before it died. A second SMS is
                // worse than none: record the unknown outcome and stop (a message already marked
                // is not marked again, and `advance` records its event only when it moves). A
                // report from the provider may still resume the request. When the marking lost
                // to a report that just landed, the report decides and nothing fails here.
                reviews::advance(
                    &deps.db,
                    &req.id,
                    after_failure,
                    json!({"reason": "send_outcome_unknown", "message": msg.id}),
                    now,
                )
                .await?;
            }
            return Ok(());
        }
    };
    let sms = OutgoingSms {
        to: req.phone.clone(),
        body: rendered.body.clone(),
        status_callback: deps
            .status_callback
            .as_deref()
            .map(|base| reviews::callback_url(base, msg.id)),
        validity_period_s: Some(u32::try_from(validity.as_secs()).unwrap_or(u32::MAX)),
        reference: msg.id.to_string(),
    };
    match send_renewing_lease(deps, &sms, msg.id).await {
        Ok(sent) => {
            reviews::message_status(
                &deps.db,
                &msg,
                &sent.status,
                Some(&sent.provider_id),
                None,
                now,
            )
            .await?;
            reviews::advance(
                &deps.db,
                &req.id,
                sent_status,
                json!({"message": msg.id, "provider_id": sent.provider_id}),
                now,
            )
            .await?;
        }
        Err(e) => failure::record(deps, req, &msg, &e, after_failure, now).await?,
    }
    Ok(())
}

/// Calls the provider, renewing the attempt's lease while the call is open so that a duplicate
/// job can tell this live run from a dead one.
async fn send_renewing_lease(
    deps: &Deps,
    sms: &OutgoingSms,
    message_id: uuid::Uuid,
) -> Result<SentSms, SmsError> {
    let send = deps.sms.send(sms);
    tokio::pin!(send);
    let period = reviews::ATTEMPT_HEARTBEAT;
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            result = &mut send => return result,
            _ = renew.tick() => {
                if let Err(e) = reviews::touch_attempt(&deps.db, message_id, deps.clock.now()).await {
                    tracing::warn!(error = %e, "could not renew the send attempt's lease");
                }
            }
        }
    }
}

/// Stores the paid call's result the first time the request reaches an outcome the caller can
/// act on (sent, deferred, scheduled, or refused), and wakes the waiting API.
async fn first_outcome(deps: &Deps, review_id: &str) -> Result<(), JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        return Ok(());
    };
    let Some(call) = calls::load(&deps.db, req.call_id).await? else {
        return Ok(());
    };
    // `sending` is no outcome: the run inside the provider call stores the result when the
    // provider answers (or a later run does, once that run's lease has lapsed).
    if call.status == calls::status::COMPLETED || req.status == status::SENDING {
        return Ok(());
    }
    let msg = reviews::message(&deps.db, &req.id, message_kind::INITIAL).await?;
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
    let body = reviews::response_json(
        &req,
        msg.as_ref(),
        (body, encoding, segments),
        &deps.public_base_url,
        receipt::json(&call.receipt_id, call.created_at),
    );
    calls::complete(
        &deps.db,
        call.id,
        calls::Finisher::Unleased,
        body,
        (0, 0),
        0,
    )
    .await?;
    deps.completions.notify(call.id).await;
    Ok(())
}
