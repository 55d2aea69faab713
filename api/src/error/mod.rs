//! The API's one error type and its single mapping to HTTP (CONTRACT 5).
//!
//! Every non-2xx body except 402 is `{"error":{"code","message","details","request_id"}}`.
//! Internal errors are opaque to clients: the cause is logged with its source chain, the client
//! gets the request id.

mod problems;

pub use problems::{Problem, ProblemKind};

use crate::{request_id, x402::challenge::Challenge};
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use grove_common::{health::ProviderKind, schema::Violation};
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
    /// 422: more than one problem in one review-request body (say, a stale consent and a link
    /// shortener). The code is the general `invalid_request`; each detail carries its own code.
    #[error("the request has several problems; each detail carries its own code")]
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
    StillRunning {
        receipt: serde_json::Value,
        retry_after_s: u64,
    },
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
    /// 503: the database cannot be reached right now (a restart, a failover): answered before
    /// any payment is taken, and after one with the receipt's outcome kept for the identical
    /// retry, which is never charged twice.
    #[error(
        "the service's database is unreachable for a moment; nothing more will be charged: retry the identical request shortly, the same payment stays valid"
    )]
    DatabaseUnavailable,
    /// 503: no `X402_PAY_TO` configured.
    #[error("payments are not configured on this server")]
    PaymentsDisabled,
    /// 429: this client (by address) or payer (by new paid calls) is over its rate limit; never
    /// a paid repeat or a payment retry (`crate::limits`).
    #[error("too many requests from this client: wait Retry-After seconds and try again")]
    RateLimited { retry_after_s: u64 },
    /// 503: the provider this product needs is down (its health gate is open), so the product
    /// is not priced: nothing is charged, and `Retry-After` is the time of the next probe.
    /// Never answers a request whose payment is already held (a repeat, a payment retry).
    #[error(
        "{} is unavailable right now, so this work is not sold until it is back; nothing was charged: retry after Retry-After seconds",
        provider_name(*.provider)
    )]
    ProviderUnavailable {
        provider: ProviderKind,
        retry_after_s: u64,
    },
    /// 401 (admin listener): no operator token, or one that matches none of `ADMIN_TOKENS`.
    #[error(
        "an operator token is required: send Authorization: Bearer <token> (one of ADMIN_TOKENS)"
    )]
    Unauthorized,
    /// 409 (admin): the chain says otherwise than the operator's resolution; nothing changed.
    #[error("the chain disagrees: {0}; nothing was changed")]
    ChainDisagrees(String),
    /// 409 (admin): the payment is not waiting for an operator (already decided, or still being
    /// reconciled on schedule); nothing changed.
    #[error("{0}; nothing was changed")]
    NotResolvable(String),
    /// 503: the coaching calls ahead would not finish within the deadline at the workers'
    /// measured pace, so a new one is not priced (`paid::admission`). Never answers a request
    /// whose payment is already held.
    #[error(
        "every worker is busy with calls that would not leave room for this one within the deadline, so it is not sold now; nothing was charged: retry after Retry-After seconds"
    )]
    OverCapacity { retry_after_s: u64 },
    /// 503 `over_capacity`: paid calls' writes are queued for the database, so a new call is
    /// not priced (`paid::health::writes_keep_up`). Never answers a request whose payment is
    /// already held.
    #[error(
        "the paid calls ahead of this one are waiting for the database, so it is not sold now; nothing was charged: retry after Retry-After seconds"
    )]
    WritesQueued { retry_after_s: u64 },
    /// 500: a bug or an outage. The cause, with its own sources, is logged; the client gets
    /// only the request id.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A 500 that keeps `cause` (an error, with its source chain, or a message) for the log.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ApiError::Internal(cause.into())
    }
}

/// A database that cannot be reached is a 503 the client may retry (issue 27); a statement the
/// database refused is a bug or an outage of another kind: a 500.
impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        if grove_common::db::outage::is_unreachable(&e) {
            tracing::warn!(error = %e, "database unreachable; answering 503");
            return ApiError::DatabaseUnavailable;
        }
        ApiError::internal(e)
    }
}

/// Seconds a 503 `database_unavailable` asks a client to wait: a restart or failover is over
/// within seconds.
const DATABASE_RETRY_AFTER_S: u64 = 2;

/// An error and every source under it, outermost first: `a: b: c`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(source) = next {
        out.push_str(": ");
        out.push_str(&source.to_string());
        next = source.source();
    }
    out
}

/// The code of a `ProviderUnavailable` answer, naming the provider that is down.
pub fn unavailable_code(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::Model => "model_unavailable",
        ProviderKind::Sms => "sms_unavailable",
    }
}

fn provider_name(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::Model => "the model provider",
        ProviderKind::Sms => "the SMS provider",
    }
}

/// Seconds a 503 asks a client to wait. What is not on sale (no wallet, no model provider) comes
/// back with an operator's change and a restart, never within seconds: a short hint would only
/// make agents poll.
const NOT_ON_SALE_RETRY_AFTER_S: u64 = 300;

impl ApiError {
    /// The `Retry-After` of the answers where waiting can help, as the OpenAPI document lists
    /// them (409 `request_in_progress`, 503, 504).
    pub fn retry_after_s(&self) -> Option<u64> {
        match self {
            ApiError::RequestInProgress { retry_after_s }
            | ApiError::StillRunning { retry_after_s, .. }
            | ApiError::SettlementPending { retry_after_s, .. }
            | ApiError::SettlementUnavailable { retry_after_s }
            | ApiError::RateLimited { retry_after_s }
            | ApiError::OverCapacity { retry_after_s }
            | ApiError::WritesQueued { retry_after_s }
            | ApiError::ProviderUnavailable { retry_after_s, .. } => Some(*retry_after_s),
            ApiError::Unavailable(_) | ApiError::PaymentsDisabled => {
                Some(NOT_ON_SALE_RETRY_AFTER_S)
            }
            ApiError::DatabaseUnavailable => Some(DATABASE_RETRY_AFTER_S),
            _ => None,
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
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
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::ChainDisagrees(_) | ApiError::NotResolvable(_) => StatusCode::CONFLICT,
            ApiError::UpstreamFailed { .. } => StatusCode::BAD_GATEWAY,
            ApiError::StillRunning { .. } | ApiError::SettlementPending { .. } => {
                StatusCode::GATEWAY_TIMEOUT
            }
            ApiError::Unavailable(_)
            | ApiError::PaymentsDisabled
            | ApiError::SettlementUnavailable { .. }
            | ApiError::DatabaseUnavailable
            | ApiError::OverCapacity { .. }
            | ApiError::WritesQueued { .. }
            | ApiError::ProviderUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
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
            ApiError::Unauthorized => "unauthorized",
            ApiError::ChainDisagrees(_) => "chain_disagrees",
            ApiError::NotResolvable(_) => "not_resolvable",
            ApiError::UpstreamFailed { .. } => "upstream_failed",
            ApiError::StillRunning { .. } => "still_running",
            ApiError::SettlementPending { .. } => "settlement_pending",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::SettlementUnavailable { .. } => "settlement_unavailable",
            ApiError::PaymentsDisabled => "payments_disabled",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::ProviderUnavailable { provider, .. } => unavailable_code(*provider),
            ApiError::DatabaseUnavailable => "database_unavailable",
            ApiError::OverCapacity { .. } | ApiError::WritesQueued { .. } => "over_capacity",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl ApiError {
    /// The body every transport answers this error with: `{"error":{code, message, details,
    /// request_id[, receipt]}}` (the HTTP response, and an MCP tool's error result). Logs the
    /// cause of an internal error, with its chain, which the body never carries.
    pub fn body(&self) -> serde_json::Value {
        if let ApiError::Internal(cause) = self {
            tracing::error!(error.cause = %chain(cause.as_ref()), "internal error");
        }
        let (message, details) = self.message_and_details();
        let mut error = json!({
            "code": self.code(),
            "message": message,
            "details": details,
            "request_id": request_id::current(),
        });
        if let ApiError::UpstreamFailed { receipt }
        | ApiError::StillRunning { receipt, .. }
        | ApiError::SettlementPending { receipt, .. } = self
        {
            error["receipt"] = receipt.clone();
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::PaymentRequired(challenge) = self {
            return challenge.into_response();
        }
        let status = self.status();
        let mut response = (status, Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after_s()
            && let Ok(v) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if matches!(self, ApiError::Unauthorized) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"grove-admin\""),
            );
        }
        // A 405's `Allow` is set by the router from the methods the matched route really has.
        response
    }
}

#[cfg(test)]
mod tests;
