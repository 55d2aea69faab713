//! The review-request action on the API side: the checks that come before any 402 (the body,
//! consent, opt-out list, cooldown), the sandbox's answer, and turning a paid request into its
//! stored plan.

mod act;
pub mod plan;
pub mod sandbox;

pub use act::act;

use crate::error::{ApiError, Problem, ProblemKind};
use chrono::{DateTime, Utc};
use grove_common::{
    db::reviews,
    requests::{self, ReviewRequestBody},
    review,
    schema::{SchemaRegistry, Violation},
};
use sea_orm::DatabaseConnection;
use serde_json::Value;

/// Everything checked before a review request may be offered for sale, in the contract's order:
/// the body's rules, then the opt-out list, then the cooldown. A refusal here is never charged.
/// The paid call and the sandbox both run exactly this, so they refuse alike. What passes comes
/// back as its type.
pub async fn pre_payment_checks(
    schemas: &SchemaRegistry,
    db: &DatabaseConnection,
    body: Value,
    now: DateTime<Utc>,
    public_base_url: &str,
) -> Result<ReviewRequestBody, ApiError> {
    let found = problems(schemas, &body, now, public_base_url);
    if !found.is_empty() {
        return Err(ApiError::unprocessable(found));
    }
    let body: ReviewRequestBody =
        requests::parse(body).map_err(|v| ApiError::Validation(vec![v]))?;
    let phone = body.customer.phone.e164();
    if reviews::is_suppressed(db, phone).await? {
        return Err(ApiError::RecipientOptedOut);
    }
    let days = body.cooldown_days();
    if days > 0 && reviews::requested_since(db, phone, now - chrono::Duration::days(days)).await? {
        return Err(ApiError::CooldownActive { days });
    }
    Ok(body)
}

/// Every problem of the body in one list, so one answer tells the caller all there is to fix:
/// the schema's violations, then the rules a schema cannot state, less those at a path the
/// schema already flagged (or under it). A schema `pattern` the rules explain in words (the `+1`
/// phone, `https://`) gives way to the rules' own problems at that path, with their codes.
/// Consent problems are of their own kind.
pub fn problems(
    schemas: &SchemaRegistry,
    body: &Value,
    now: DateTime<Utc>,
    public_base_url: &str,
) -> Vec<Problem> {
    if !body.is_object() {
        return vec![problem(Violation::new("", "must be a JSON object"))];
    }
    let rules = review::validate_request(body, now, public_base_url);
    let mut found: Vec<Violation> = schemas.action().request.violations(body);
    found.retain(|v| !(v.is_pattern_mismatch() && rules.iter().any(|r| r.path == v.path)));
    let flagged: Vec<String> = found.iter().map(|v| v.path.clone()).collect();
    let covered = |path: &str| {
        flagged.iter().any(|f| {
            path == f
                || (!f.is_empty()
                    && path.starts_with(f.as_str())
                    && path[f.len()..].starts_with('/'))
        })
    };
    for v in rules {
        if !covered(&v.path) && !found.contains(&v) {
            found.push(v);
        }
    }
    found.into_iter().map(problem).collect()
}

fn problem(violation: Violation) -> Problem {
    let consent = violation.path == "/consent" || violation.path.starts_with("/consent/");
    Problem {
        kind: if consent {
            ProblemKind::Consent
        } else {
            ProblemKind::Validation
        },
        violation,
    }
}
