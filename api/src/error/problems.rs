//! The problems of a request body, and how each error lists its problems in its body's
//! `details` (with the message that sums them up).

use super::ApiError;
use grove_common::schema::Violation;
use serde_json::json;

/// The kind of one problem found in a request body: the code of the whole 422 when it is the
/// body's only problem, and its detail's code when its rule has none more specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// `validation_failed`: the schema, or a rule it cannot state.
    Validation,
    /// `consent_invalid`.
    Consent,
}

impl ProblemKind {
    pub fn code(self) -> &'static str {
        match self {
            ProblemKind::Validation => "validation_failed",
            ProblemKind::Consent => "consent_invalid",
        }
    }
}

/// One problem of a body, with its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub violation: Violation,
}

/// A detail of an error body: `{path, message}`, plus `code` on the 422s that list problems.
fn detail(v: &Violation, code: Option<&str>) -> serde_json::Value {
    match code {
        Some(code) => json!({"path": v.path, "message": v.message, "code": code}),
        None => json!({"path": v.path, "message": v.message}),
    }
}

/// A listed problem's detail: its rule's own code, else its kind's.
fn problem_detail(v: &Violation, kind: ProblemKind) -> serde_json::Value {
    detail(v, Some(v.code.unwrap_or(kind.code())))
}

impl ApiError {
    /// The 422 for a review-request body's problems (at least one). A lone problem keeps the
    /// code clients know (`consent_invalid` for consent, else `validation_failed`); several
    /// answer the general `invalid_request`. Either way each detail carries its own code
    /// (`consent_too_old`, `link_shortener`, …: `grove_common::review::codes`).
    pub fn unprocessable(mut problems: Vec<Problem>) -> ApiError {
        if problems.len() > 1 {
            return ApiError::InvalidRequest(problems);
        }
        match problems.pop() {
            Some(Problem {
                kind: ProblemKind::Consent,
                violation,
            }) => ApiError::ConsentInvalid(vec![violation]),
            Some(Problem { violation, .. }) => ApiError::Validation(vec![violation]),
            None => ApiError::Validation(vec![]),
        }
    }

    pub(super) fn message_and_details(&self) -> (String, Vec<serde_json::Value>) {
        let listed = |v: &[Violation], kind: ProblemKind| {
            v.iter().map(|x| problem_detail(x, kind)).collect()
        };
        match self {
            ApiError::ConsentInvalid(v) => (self.to_string(), listed(v, ProblemKind::Consent)),
            ApiError::Validation(v) => (
                format!(
                    "the request does not match its schema ({} problem{})",
                    v.len(),
                    if v.len() == 1 { "" } else { "s" }
                ),
                listed(v, ProblemKind::Validation),
            ),
            ApiError::InvalidRequest(problems) => (
                format!(
                    "the request has {} problems; each detail carries its own code",
                    problems.len()
                ),
                problems
                    .iter()
                    .map(|p| problem_detail(&p.violation, p.kind))
                    .collect(),
            ),
            ApiError::ModeNotOffered {
                coach,
                mode,
                offered,
            } => (
                format!(
                    "coach {coach:?} does not offer mode {mode:?}; details list the modes it offers"
                ),
                offered
                    .iter()
                    .map(|m| detail(&Violation::new("/mode", *m), None))
                    .collect(),
            ),
            ApiError::InvalidIdempotencyKey(why) => (
                self.to_string(),
                vec![detail(
                    &Violation::new("/headers/Idempotency-Key", *why),
                    None,
                )],
            ),
            ApiError::Internal(_) => (
                "internal error; quote the request_id when reporting it".into(),
                vec![],
            ),
            other => (other.to_string(), vec![]),
        }
    }
}
