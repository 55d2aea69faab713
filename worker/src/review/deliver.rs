//! Sending one message at most once: the attempt is recorded before the provider is called, and
//! the provider's answer (or its absence) moves the message and the request.

use super::failure;
use crate::{
    jobs::{Deps, JobError},
    sms::{OutgoingSms, SentSms, SmsError},
};
use grove_common::{
    db::{
        entities::review_request,
        reviews::{self, Attempt, NewMessage, lifecycle, message_kind},
    },
    review::{MessageStatus, ReviewStatus, message},
};
use serde_json::json;

/// Sends one message at most once: record the attempt, then call the provider.
pub(super) async fn deliver(
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
        (ReviewStatus::Sent, ReviewStatus::Failed)
    } else {
        (ReviewStatus::FollowUpSent, ReviewStatus::Completed)
    };
    let Ok(rendered) = rendered else {
        lifecycle::advance(
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
                lifecycle::advance(
                    &deps.db,
                    &req.id,
                    sent_status,
                    json!({"message": msg.id}),
                    now,
                )
                .await?;
            } else if msg.status == MessageStatus::Unknown
                || reviews::message_status(&deps.db, &msg, MessageStatus::Unknown, None, None, now)
                    .await?
                    .is_some()
            {
                // The earlier run may have reached the provider before it died. A second SMS is
                // worse than none: record the unknown outcome and stop (a message already marked
                // is not marked again, and `advance` records its event only when it moves). A
                // report from the provider may still resume the request. When the marking lost
                // to a report that just landed, the report decides and nothing fails here.
                lifecycle::advance(
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
                sent.status,
                Some(&sent.provider_id),
                None,
                now,
            )
            .await?;
            lifecycle::advance(
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
