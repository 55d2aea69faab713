//! The provider layer's error, and the classification of HTTP failures both wire formats share.

use super::{Usage, structured};
use crate::retry::{Failure, retry_after};
use reqwest::header::HeaderMap;

/// Why a call produced no usable JSON. Variants that consumed tokens carry the usage, so the caller
/// can bill every attempt; the comment on each says whether the retry layer already retried it.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The model refused, or a content filter stopped it. Never retried.
    #[error("the model refused: {message}")]
    Refusal { message: String, usage: Usage },
    /// The answer hit the output budget or the context window, so its JSON is cut. Never retried
    /// here; the engine may ask once more with a larger budget.
    #[error("the model's answer was truncated")]
    Truncated { usage: Usage },
    /// Out of credit or over a spend limit: retrying cannot help until an operator acts.
    #[error("the LLM account is out of quota: {message}")]
    Quota { message: String },
    /// 401/403: the key is missing, wrong or not allowed. Never retried.
    #[error("the LLM provider refused our credentials ({status}): {message}")]
    Auth { status: u16, message: String },
    /// Any other 4xx: the request itself is wrong (schema, model name, size). Never retried.
    #[error("the LLM provider rejected the request ({status}): {message}")]
    BadRequest { status: u16, message: String },
    /// 429/5xx/529, timeouts and connection errors, once the retry budget is used up.
    #[error("the LLM provider is unavailable ({}): {message}", status_label(*.status))]
    Upstream {
        status: Option<u16>,
        message: String,
    },
    /// The call's deadline passed before the provider answered, or left no time for another
    /// attempt. Whether the provider billed the last attempt is unknown: it may have been
    /// generating when we stopped waiting.
    #[error("the call's deadline passed before the model answered: {message}")]
    Deadline { message: String },
    /// A 200 whose content is missing or is not JSON. `text` is what the model wrote (clipped),
    /// so a re-ask can show it; empty when there was no text.
    #[error("the LLM provider's answer is unusable: {message}")]
    InvalidOutput {
        message: String,
        text: String,
        usage: Usage,
    },
    /// The configuration cannot produce a working client (raised by `from_config` only).
    #[error("the LLM client cannot be built: {message}")]
    Config { message: String },
}

fn status_label(status: Option<u16>) -> String {
    status.map_or_else(|| "no response".to_owned(), |s| s.to_string())
}

impl LlmError {
    /// A stable label for metrics and spans.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Refusal { .. } => "refusal",
            LlmError::Truncated { .. } => "truncated",
            LlmError::Quota { .. } => "quota",
            LlmError::Auth { .. } => "auth",
            LlmError::BadRequest { .. } => "bad_request",
            LlmError::Upstream { .. } => "upstream",
            LlmError::Deadline { .. } => "deadline",
            LlmError::InvalidOutput { .. } => "invalid_output",
            LlmError::Config { .. } => "config",
        }
    }

    /// Tokens this failed call consumed; zero when the provider billed nothing.
    pub fn usage(&self) -> Usage {
        match self {
            LlmError::Refusal { usage, .. }
            | LlmError::Truncated { usage }
            | LlmError::InvalidOutput { usage, .. } => *usage,
            _ => Usage::default(),
        }
    }
}

/// The parts of an error body both providers share: OpenAI `{error: {message, type, code}}`,
/// Anthropic `{type: "error", error: {type, message}}`, older vLLM `{object: "error", message,
/// type, code}` at the top level, Ollama's native `{error: "text"}`. All optional.
#[derive(Debug, Default, serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Detail(ErrorDetail),
    Text(String),
}

impl ErrorBody {
    fn detail(self) -> ErrorDetail {
        match self.error {
            Some(ErrorField::Detail(d)) => d,
            Some(ErrorField::Text(message)) => ErrorDetail {
                message: Some(message),
                ..ErrorDetail::default()
            },
            None => ErrorDetail {
                message: self.message,
                ..ErrorDetail::default()
            },
        }
    }
}

#[derive(Debug, Default, serde::Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    // A string on OpenAI, sometimes a number or null on compatible servers.
    #[serde(default)]
    code: Option<serde_json::Value>,
}

/// Error codes and types that mean "out of money", whatever the status.
const QUOTA_CODES: &[&str] = &[
    "insufficient_quota",
    "billing_error",
    "billing_hard_limit_reached",
    "billing_not_active",
];

/// Wording of quota and spend-limit errors. Bare "billing" is deliberately absent: OpenAI's
/// ordinary rate-limit message links to its billing page.
const QUOTA_PHRASES: &[&str] = &[
    "exceeded your current quota",
    "credit balance",
    "spend limit",
    "spending limit",
    "api usage limit",
    "billing hard limit",
    "insufficient_quota",
];

/// Classifies a non-2xx answer: what is worth retrying, and what is final.
pub(super) fn classify_failure(status: u16, headers: &HeaderMap, body: &str) -> Failure<LlmError> {
    let detail = serde_json::from_str::<ErrorBody>(body)
        .map(ErrorBody::detail)
        .unwrap_or_default();
    let message = clip(
        detail
            .message
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| fallback_message(status, body)),
    );
    if (400..500).contains(&status) && is_quota(status, &detail, &message) {
        return Failure::Final(LlmError::Quota { message });
    }
    match status {
        401 | 403 => Failure::Final(LlmError::Auth { status, message }),
        // Ollama answers 500 when it cannot turn our schema into a grammar: deterministic, so
        // final, and read by the client as "this server cannot do json_schema".
        500..=599 if structured::grammar_failed(&message) => {
            Failure::Final(LlmError::BadRequest { status, message })
        }
        // 408 and 409 are what the official SDKs retry besides 429 and 5xx.
        408 | 409 | 429 | 500..=599 => Failure::Retry {
            error: LlmError::Upstream {
                status: Some(status),
                message,
            },
            retry_after: retry_after(headers),
        },
        _ => Failure::Final(LlmError::BadRequest { status, message }),
    }
}

fn is_quota(status: u16, detail: &ErrorDetail, message: &str) -> bool {
    let code = detail.code.as_ref().and_then(|c| c.as_str());
    let coded = [detail.kind.as_deref(), code]
        .into_iter()
        .flatten()
        .any(|c| QUOTA_CODES.contains(&c));
    let lower = message.to_lowercase();
    status == 402 || coded || QUOTA_PHRASES.iter().any(|p| lower.contains(p))
}

/// A proxy's HTML page or an empty body: keep a short excerpt so the log says something useful.
fn fallback_message(status: u16, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        body.to_owned()
    }
}

pub(super) use crate::log_text::clip;

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(status: u16, body: &str) -> Failure<LlmError> {
        classify_failure(status, &HeaderMap::new(), body)
    }

    fn is_final_quota(f: Failure<LlmError>) -> bool {
        matches!(f, Failure::Final(LlmError::Quota { .. }))
    }

    #[test]
    fn quota_is_recognised_by_code_or_wording_but_not_by_a_billing_link() {
        let openai = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(is_final_quota(classify(429, openai)));
        let credit = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#;
        assert!(is_final_quota(classify(400, credit)));
        let rate = r#"{"error":{"message":"Rate limit reached. You can increase your rate limit by adding a payment method at https://platform.openai.com/account/billing.","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert!(matches!(
            classify(429, rate),
            Failure::Retry {
                error: LlmError::Upstream {
                    status: Some(429),
                    ..
                },
                ..
            }
        ));
    }

    #[test]
    fn statuses_map_to_their_variants() {
        assert!(matches!(
            classify(401, ""),
            Failure::Final(LlmError::Auth { status: 401, .. })
        ));
        assert!(matches!(
            classify(404, "<html>nope</html>"),
            Failure::Final(LlmError::BadRequest { status: 404, .. })
        ));
        assert!(matches!(
            classify(529, ""),
            Failure::Retry {
                error: LlmError::Upstream {
                    status: Some(529),
                    ..
                },
                ..
            }
        ));
    }
}
