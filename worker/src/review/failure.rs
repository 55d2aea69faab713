//! What a send that produced no message leaves behind. A definite refusal fails the message (and
//! 21610 suppresses the phone); a 5xx, a timeout or a transport error after the request left is
//! an unknown outcome (issue 10): Twilio may have queued the text, so it is recorded exactly as a
//! run that died mid-call is, never sent again, and a signed report of the message resumes the
//! request (the api's status webhook).

use crate::{jobs::Deps, sms::SmsError};
use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        entities::{review_message, review_request},
        reviews::{self, lifecycle},
    },
    review::{MessageStatus, ReviewStatus},
};
use sea_orm::DbErr;
use serde_json::json;

/// Records a failed send of `msg` for `req`; `after_failure` is where the request goes when the
/// message did not go out (`failed` for the first message, `completed` for the follow-up).
pub(super) async fn record(
    deps: &Deps,
    req: &review_request::Model,
    msg: &review_message::Model,
    e: &SmsError,
    after_failure: ReviewStatus,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let db = &deps.db;
    let code = e.code().and_then(|c| i32::try_from(c).ok());
    if e.may_have_been_sent() {
        tracing::warn!(error = %e, "SMS send outcome unknown; waiting for Twilio's report");
        if reviews::message_status(db, msg, MessageStatus::Unknown, None, code, now)
            .await?
            .is_some()
        {
            lifecycle::advance(
                db,
                &req.id,
                after_failure,
                json!({"reason": "send_outcome_unknown", "message": msg.id, "code": code}),
                now,
            )
            .await?;
        }
        // Otherwise a report landed while the call was open: it has moved the message (and the
        // request) already, and decides.
        return Ok(());
    }
    reviews::message_status(db, msg, MessageStatus::Failed, None, code, now).await?;
    if matches!(e, SmsError::OptedOut { .. }) {
        let detail = json!({"reason": "provider_opted_out", "code": code});
        lifecycle::opt_out(db, &req.phone, lifecycle::PROVIDER_OPT_OUT, detail, now).await?;
    } else {
        tracing::warn!(error = %e, "SMS send failed");
        lifecycle::advance(
            db,
            &req.id,
            after_failure,
            json!({"reason": "provider_error", "code": code}),
            now,
        )
        .await?;
    }
    Ok(())
}
