//! Request validation against the published schemas, plus the checks a schema cannot express
//! (a body's mode must be one the coach in the path offers).

use crate::error::ApiError;
use grove_common::{
    catalog::{self, Coach, MODES, Mode},
    schema::{SchemaRegistry, Violation},
};
use serde_json::Value;

/// Validates a coaching body as the variant whose mode constant matches (spec 2.3), and returns
/// the mode. Every violation is reported, not just the first.
pub fn coaching_request(
    schemas: &SchemaRegistry,
    coach: &Coach,
    body: &Value,
) -> Result<&'static Mode, ApiError> {
    if !body.is_object() {
        return Err(ApiError::Validation(vec![Violation::new(
            "",
            "must be a JSON object",
        )]));
    }
    let requested = body.get("mode");
    let Some(mode) = requested.and_then(Value::as_str).and_then(catalog::mode) else {
        // No variant matches: check the rest of the body against any variant, then name the mode.
        let mut violations = schema_violations(schemas, MODES[0].id, body)?;
        violations.retain(|v| v.path != "/mode");
        let problem = match requested {
            None => "is required".to_owned(),
            Some(_) => format!(
                "must be one of the sixteen mode ids: {}",
                MODES.iter().map(|m| m.id).collect::<Vec<_>>().join(", ")
            ),
        };
        violations.insert(0, Violation::new("/mode", problem));
        return Err(ApiError::Validation(violations));
    };
    let violations = schema_violations(schemas, mode.id, body)?;
    if !violations.is_empty() {
        return Err(ApiError::Validation(violations));
    }
    if !coach.offers(mode.id) {
        return Err(ApiError::ModeNotOffered {
            coach: coach.id,
            mode: mode.id.to_owned(),
            offered: coach.modes.iter().map(|m| m.mode).collect(),
        });
    }
    Ok(mode)
}

fn schema_violations(
    schemas: &SchemaRegistry,
    mode_id: &str,
    body: &Value,
) -> Result<Vec<Violation>, ApiError> {
    let pair = schemas
        .mode(mode_id)
        .ok_or_else(|| ApiError::Internal(format!("no schema registered for mode {mode_id}")))?;
    Ok(pair.request.violations(body))
}
