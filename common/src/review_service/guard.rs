//! The one guard every send passes through, first message and follow-up alike (CONTRACT 9):
//! the opt-out list, the consent's age, and the recipient's quiet hours, read at send time.

use crate::{
    db::{
        entities::{consent, review_request},
        reviews,
    },
    review::{
        ReviewStatus,
        phone::UsPhone,
        quiet_hours::{self, Opening},
    },
};
use chrono::{DateTime, Months, Utc};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use std::time::Duration;

pub enum Decision {
    /// Send now; the provider must drop the message if it cannot deliver within `validity`.
    Send { validity: Duration },
    /// Outside the recipient's window: try again at `until`.
    Defer { until: DateTime<Utc> },
    /// Must not send: the request ends in `status` for `reason`.
    Refuse {
        status: ReviewStatus,
        reason: &'static str,
    },
}

/// Consent counts for 18 months after it was captured.
pub const CONSENT_MONTHS: u32 = 18;

/// The guard for `req` at `now`, with its consent as recorded.
pub async fn at_send_time(
    db: &impl ConnectionTrait,
    req: &review_request::Model,
    now: DateTime<Utc>,
) -> Result<Decision, DbErr> {
    let consent = consent::Entity::find_by_id(req.consent_id).one(db).await?;
    check(db, req, consent.as_ref(), now).await
}

pub async fn check(
    db: &impl ConnectionTrait,
    req: &review_request::Model,
    consent: Option<&consent::Model>,
    now: DateTime<Utc>,
) -> Result<Decision, DbErr> {
    if reviews::is_suppressed(db, &req.phone).await? {
        return Ok(Decision::Refuse {
            status: ReviewStatus::OptedOut,
            reason: "recipient_opted_out",
        });
    }
    let consent_ok = consent.is_some_and(|c| {
        c.captured_at
            .checked_add_months(Months::new(CONSENT_MONTHS))
            .is_some_and(|expires| expires > now)
    });
    if !consent_ok {
        return Ok(Decision::Refuse {
            status: ReviewStatus::Failed,
            reason: "consent_expired",
        });
    }
    let (Ok(tz), Ok(phone)) = (
        quiet_hours::parse_zone(&req.zone),
        UsPhone::parse(&req.phone),
    ) else {
        return Ok(Decision::Refuse {
            status: ReviewStatus::Failed,
            reason: "invalid_zone_or_phone",
        });
    };
    // The stricter of the stated state and the area code's (Florida presumes a Florida area code
    // is a Florida resident).
    let states = quiet_hours::recipient_states(req.recipient_state.as_deref(), &phone);
    Ok(match quiet_hours::next_opening_all(now, tz, &states) {
        Opening::Now { closes_at } => {
            // The window's end caps how long the provider may hold the message, so a queued
            // SMS can never land after hours.
            let secs = (closes_at - now).num_seconds().max(60);
            Decision::Send {
                validity: Duration::from_secs(u64::try_from(secs).unwrap_or(60)),
            }
        }
        Opening::Later { opens_at, .. } => Decision::Defer { until: opens_at },
    })
}
