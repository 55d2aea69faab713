//! The API's one error type and its single mapping to HTTP (CONTRACT 5).
//!
//! Every non-2xx body except 402 is `{"error":{"code","message","details","request_id"}}`.
//! Internal errors are opaque to clients: the cause is logged, the client gets the request id.

use crate::{request_id, x402::challenge::Challenge};
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use grove_common::schema::Violation;
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the body is not JSON.
    #[error("body is not valid JSON: {0}")]
    InvalidJson(String),
    /// 404: no such coach.
    #[error("unknown agent {0:?}")]
    UnknownAgent(String),
    /// 404: no such mode (schema paths).
    #[error("unknown mode {0:?}")]
    UnknownMode(String),
    /// 404: nothing here.
    #[error("not found")]
    NotFound,
    /// 405: the path exists, the method does not (the router adds the route's own `Allow`).
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 413: body over the limit.
    #[error("body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 415: not `application/json`.
    #[error("content type must be application/json")]
    UnsupportedMediaType,
    /// 422: schema violations, every one of them.
    #[error("the request does not match its schema")]
    Validation(Vec<Violation>),
    /// 422: the review request's consent is missing, in the future, too old, or of an unknown
    /// method, and the body has no other kind of problem.
    #[error("the consent does not allow this message")]
    ConsentInvalid(Vec<Violation>),
    /// 422: problems of more than one kind in one body (say, a stale consent and a link
    /// shortener). The code is the general `invalid_request`; each detail carries its own code.
    #[error("the request has problems of more than one kind; each detail carries its own code")]
    InvalidRequest(Vec<Problem>),
    /// 409: the recipient opted out of messages.
    #[error("the recipient has opted out of messages")]
    RecipientOptedOut,
    /// 409: this phone got a request within `min_days_since_last_request`.
    #[error("this phone received a review request within the last {days} days")]
    CooldownActive { days: i64 },
    /// 409: the request already finished and cannot be cancelled.
    #[error("the request already finished ({0})")]
    AlreadyFinal(String),
    /// 403: a webhook whose signature does not verify.
    #[error("signature verification failed")]
    Forbidden,
    /// 422: a valid mode this coach does not offer.
    #[error("coach {coach:?} does not offer mode {mode:?}")]
    ModeNotOffered {
        coach: &'static str,
        mode: String,
        offered: Vec<&'static str>,
    },
    /// 422: `Idempotency-Key` empty, too long or not printable ASCII.
    #[error("invalid Idempotency-Key: {0}")]
    InvalidIdempotencyKey(&'static str),
    /// 422: the same Idempotency-Key with a different body.
    #[error("this Idempotency-Key was used with a different request body")]
    IdempotencyKeyReused,
    /// 409: an identical request is still running past the deadline.
    #[error("an identical request is still in progress; retry after {retry_after_s} s")]
    RequestInProgress { retry_after_s: u64 },
    /// 502: the provider failed after settlement; the retry is free.
    #[error("the work failed after payment; retrying the identical request is free")]
    UpstreamFailed { receipt: serde_json::Value },
    /// 504: the deadline passed; the work goes on and the receipt tells its outcome.
    #[error("the work is still running; poll the receipt or retry the identical request")]
    StillRunning { receipt: serde_json::Value },
    /// 504: the settlement's outcome is not known yet; it is being reconciled. Never a 402: the
    /// money may have moved. The receipt tells the outcome; the identical retry waits or replays.
    #[error(
        "the payment's settlement has not been confirmed yet; nothing more will be charged: poll the receipt or retry the identical request"
    )]
    SettlementPending {
        receipt: serde_json::Value,
        retry_after_s: u64,
    },
    /// 503: the facilitator refused the operator's credentials, so nothing was settled. Not a
    /// 402: the payer did nothing wrong, and the same payment stays good for the identical retry.
    #[error(
        "payments cannot be settled right now because of a problem on our side; nothing was charged: retry the identical request later, the same payment stays valid"
    )]
    SettlementUnavailable { retry_after_s: u64 },
    /// 402: the x402 challenge (its body is the v1 requirements, not the error shape).
    #[error("payment required: {}", .0.error)]
    PaymentRequired(Box<Challenge>),
    /// 503: the work cannot be done right now, so it is not sold.
    #[error("{0}")]
    Unavailable(&'static str),
    /// 503: no `X402_PAY_TO` configured.
    #[error("payments are not configured on this server")]
    PaymentsDisabled,
    /// 500: a bug or an outage; the cause is logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The kind of one problem found in a request body: the code its detail carries, and the code of
/// the whole 422 when every problem is of this kind.
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

impl ApiError {
    /// The 422 for a body's problems (at least one). A single kind keeps its own code
    /// (`validation_failed` or `consent_invalid`), so clients written against it keep working;
    /// several kinds answer `invalid_request`. Either way every detail carries its own code.
    pub fn unprocessable(problems: Vec<Problem>) -> ApiError {
        let all = |kind| problems.iter().all(|p| p.kind == kind);
        let violations =
            |problems: Vec<Problem>| problems.into_iter().map(|p| p.violation).collect();
        if all(ProblemKind::Validation) {
            ApiError::Validation(violations(problems))
        } else if all(ProblemKind::Consent) {
            ApiError::ConsentInvalid(violations(problems))
        } else {
            ApiError::InvalidRequest(problems)
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidJson(_) => StatusCode::BAD_REQUEST,
            ApiError::UnknownAgent(_) | ApiError::UnknownMode(_) | ApiError::NotFound => {
                StatusCode::NOT_FOUND
            }
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Validation(_)
            | ApiError::ModeNotOffered { .. }
            | ApiError::InvalidIdempotencyKey(_)
            | ApiError::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PaymentRequired(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::RequestInProgress { .. }
            | ApiError::RecipientOptedOut
            | ApiError::CooldownActive { .. }
            | ApiError::AlreadyFinal(_) => StatusCode::CONFLICT,
            ApiError::ConsentInvalid(_) | ApiError::InvalidRequest(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::UpstreamFailed { .. } => StatusCode::BAD_GATEWAY,
            ApiError::StillRunning { .. } | ApiError::SettlementPending { .. } => {
                StatusCode::GATEWAY_TIMEOUT
            }
            ApiError::Unavailable(_)
            | ApiError::PaymentsDisabled
            | ApiError::SettlementUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidJson(_) => "invalid_json",
            ApiError::UnknownAgent(_) => "unknown_agent",
            ApiError::UnknownMode(_) => "unknown_mode",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::Validation(_) => "validation_failed",
            ApiError::ModeNotOffered { .. } => "mode_not_offered",
            ApiError::InvalidIdempotencyKey(_) => "invalid_idempotency_key",
            ApiError::PaymentRequired(_) => "payment_required",
            ApiError::IdempotencyKeyReused => "idempotency_key_reused",
            ApiError::RequestInProgress { .. } => "request_in_progress",
            ApiError::ConsentInvalid(_) => "consent_invalid",
            ApiError::InvalidRequest(_) => "invalid_request",
            ApiError::RecipientOptedOut => "recipient_opted_out",
            ApiError::CooldownActive { .. } => "cooldown_active",
            ApiError::AlreadyFinal(_) => "not_cancellable",
            ApiError::Forbidden => "forbidden",
            ApiError::UpstreamFailed { .. } => "upstream_failed",
            ApiError::StillRunning { .. } => "still_running",
            ApiError::SettlementPending { .. } => "settlement_pending",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::SettlementUnavailable { .. } => "settlement_unavailable",
            ApiError::PaymentsDisabled => "payments_disabled",
            ApiError::Internal(_) => "internal",
        }
    }

    fn message_and_details(&self) -> (String, Vec<serde_json::Value>) {
        let listed = |v: &[Violation], kind: ProblemKind| {
            v.iter().map(|x| detail(x, Some(kind.code()))).collect()
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
                    "the request has {} problems of more than one kind; each detail carries its own code",
                    problems.len()
                ),
                problems
                    .iter()
                    .map(|p| detail(&p.violation, Some(p.kind.code())))
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::PaymentRequired(challenge) = self {
            return challenge.into_response();
        }
        let status = self.status();
        if let ApiError::Internal(cause) = &self {
            tracing::error!(error.cause = %cause, "internal error");
        }
        let (message, details) = self.message_and_details();
        let mut error = json!({
            "code": self.code(),
            "message": message,
            "details": details,
            "request_id": request_id::current(),
        });
        if let ApiError::UpstreamFailed { receipt }
        | ApiError::StillRunning { receipt }
        | ApiError::SettlementPending { receipt, .. } = &self
        {
            error["receipt"] = receipt.clone();
        }
        let mut response = (status, Json(json!({ "error": error }))).into_response();
        if let ApiError::RequestInProgress { retry_after_s }
        | ApiError::SettlementPending { retry_after_s, .. }
        | ApiError::SettlementUnavailable { retry_after_s } = &self
            && let Ok(v) = HeaderValue::from_str(&retry_after_s.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        // A 405's `Allow` is set by the router from the methods the matched route really has.
        response
    }
}
