//! Sending one message at most once: the attempt is recorded before the provider is called (or
//! an earlier try the provider did not take was claimed back by the service), the lease is
//! renewed while the call is open, and the provider's answer comes back as an event.

use crate::{
    jobs::{Deps, JobError},
    sms::{OutgoingSms, SentSms, SmsError},
};
use grove_common::review_service::{MessageKind, Refusal, ReviewEvent, SendOrder};
use grove_common::{
    db::{
        entities::review_message,
        reviews::{self, Attempt, NewMessage},
    },
    review::message,
};

/// Sends the ordered message; the event to tell the service, if any (`None`: another run owns
/// this message, or the request is gone).
pub(super) async fn deliver(
    deps: &Deps,
    review_id: &str,
    order: SendOrder,
) -> Result<Option<ReviewEvent>, JobError> {
    let Some(req) = reviews::load(&deps.db, review_id).await? else {
        return Ok(None);
    };
    let msg = match order.claimed {
        Some(claimed) => claimed,
        None => {
            let link = grove_common::review::tracked_link(&deps.public_base_url, &req.link_token);
            let rendered = match order.kind {
                MessageKind::Initial => message::render(
                    req.template.as_deref(),
                    &req.first_name,
                    &req.business_name,
                    &link,
                ),
                MessageKind::FollowUp => Ok(message::render_follow_up(
                    &req.first_name,
                    &req.business_name,
                    &link,
                )),
            };
            let Ok(rendered) = rendered else {
                return Ok(Some(ReviewEvent::CannotRender { kind: order.kind }));
            };
            let attempt = reviews::begin_attempt(
                &deps.db,
                NewMessage {
                    request_id: &req.id,
                    kind: order.kind.as_str(),
                    provider: deps.sms.name(),
                    body: &rendered.body,
                    encoding: rendered.encoding.as_str(),
                    segments: rendered.segments,
                },
                deps.clock.now(),
            )
            .await?;
            match attempt {
                Attempt::Fresh(msg) => msg,
                // Two runs were ordered to send at once: the one whose row went in sends.
                Attempt::Earlier(_) => return Ok(None),
            }
        }
    };
    let sms = OutgoingSms {
        to: req.phone.clone(),
        body: msg.body.clone(),
        status_callback: deps
            .status_callback
            .as_deref()
            .map(|base| reviews::callback_url(base, msg.id)),
        validity_period_s: Some(u32::try_from(order.validity.as_secs()).unwrap_or(u32::MAX)),
        reference: msg.id.to_string(),
    };
    let result = send_renewing_lease(deps, &sms, msg.id).await;
    Ok(Some(outcome(&msg, result)))
}

/// The provider's answer as an event: taken, refused (for good or for now), or unknown.
fn outcome(msg: &review_message::Model, result: Result<SentSms, SmsError>) -> ReviewEvent {
    let message = msg.id;
    let e = match result {
        Ok(sent) => {
            return ReviewEvent::ProviderAccepted {
                message,
                provider_id: sent.provider_id,
                status: sent.status,
            };
        }
        Err(e) => e,
    };
    let code = e.code().and_then(|c| i32::try_from(c).ok());
    if e.may_have_been_sent() {
        tracing::warn!(error = %e, "SMS send outcome unknown");
        return ReviewEvent::OutcomeUnknown { message, code };
    }
    let refusal = match &e {
        SmsError::OptedOut { .. } => Refusal::OptedOut {
            code: code.unwrap_or(grove_common::twilio::OPTED_OUT_ERROR),
        },
        // Unreachable, or refusing for now, before taking anything: the service tries again.
        SmsError::Transient { .. } => Refusal::Unavailable { code },
        SmsError::Undeliverable { .. } | SmsError::Rejected { .. } | SmsError::Config { .. } => {
            Refusal::Rejected { code }
        }
    };
    tracing::warn!(error = %e, "SMS not sent");
    ReviewEvent::ProviderRefused { message, refusal }
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
