//! The review-request action on the API side: the checks that come before any 402 (consent,
//! opt-out list, cooldown), and turning a paid request into its stored plan.

pub mod plan;

use crate::error::ApiError;
use chrono::{DateTime, Utc};
use grove_common::{
    db::reviews,
    review::{self, phone::UsPhone},
    schema::Violation,
};
use sea_orm::DatabaseConnection;
use serde_json::Value;

/// Everything checked before a review request may be offered for sale, in the contract's order:
/// the body's rules, then the opt-out list, then the cooldown. A refusal here is never charged.
pub async fn pre_payment_checks(
    db: &DatabaseConnection,
    body: &Value,
    now: DateTime<Utc>,
    public_base_url: &str,
) -> Result<UsPhone, ApiError> {
    let violations = review::validate_request(body, now, public_base_url);
    if !violations.is_empty() {
        return Err(
            if violations.iter().any(|v| v.path.starts_with("/consent")) {
                ApiError::ConsentInvalid(violations)
            } else {
                ApiError::Validation(violations)
            },
        );
    }
    let raw = body
        .pointer("/customer/phone")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let phone = UsPhone::parse(raw)
        .map_err(|why| ApiError::Validation(vec![Violation::new("/customer/phone", why)]))?;
    let internal = |e: sea_orm::DbErr| ApiError::Internal(e.to_string());
    if reviews::is_suppressed(db, phone.e164())
        .await
        .map_err(internal)?
    {
        return Err(ApiError::RecipientOptedOut);
    }
    let days = body
        .get("min_days_since_last_request")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if days > 0
        && reviews::requested_since(db, phone.e164(), now - chrono::Duration::days(days))
            .await
            .map_err(internal)?
    {
        return Err(ApiError::CooldownActive { days });
    }
    Ok(phone)
}
