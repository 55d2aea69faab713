//! Request validation against the published schemas, plus the checks a schema cannot express
//! (a body's mode must be one the coach in the path offers).

use crate::error::ApiError;
use grove_common::{
    catalog::{self, Coach, MODES, Mode, ModeId},
    requests::{self, CoachingRequest},
    schema::{SchemaRegistry, Violation},
};
use serde_json::Value;

/// Validates a coaching body as the variant whose mode constant matches (spec 2.3), and returns
/// the mode and the body as its type. Every violation is reported, not just the first.
pub fn coaching_request(
    schemas: &SchemaRegistry,
    coach: &Coach,
    body: Value,
) -> Result<(&'static Mode, CoachingRequest), ApiError> {
    if !body.is_object() {
        return Err(ApiError::Validation(vec![Violation::new(
            "",
            "must be a JSON object",
        )]));
    }
    let requested = body.get("mode");
    let parsed = requested
        .and_then(Value::as_str)
        .and_then(|m| ModeId::parse(m).ok());
    let Some(mode) = parsed.map(catalog::mode) else {
        // No variant matches: check the rest of the body against any variant, then name the mode.
        let mut violations = schemas.mode(ModeId::ALL[0]).request.violations(&body);
        violations.retain(|v| v.path != "/mode");
        let problem = match requested {
            None => "is required".to_owned(),
            Some(_) => format!(
                "must be one of the sixteen mode ids: {}",
                MODES
                    .iter()
                    .map(|m| m.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        violations.insert(0, Violation::new("/mode", problem));
        return Err(ApiError::Validation(violations));
    };
    let violations = schemas.mode(mode.id).request.violations(&body);
    if !violations.is_empty() {
        return Err(ApiError::Validation(violations));
    }
    if !coach.offers(mode.id) {
        return Err(ApiError::ModeNotOffered {
            coach: coach.id.as_str(),
            mode: mode.id.as_str().to_owned(),
            offered: coach.modes.iter().map(|m| m.mode.as_str()).collect(),
        });
    }
    let request = requests::parse(body).map_err(|v| ApiError::Validation(vec![v]))?;
    Ok((mode, request))
}
