//! Why a send produced no message, and the mapping from Twilio's answers to those reasons.
//!
//! Twilio warns that the code it returns for a given cause may change, so the mapping fails
//! safe: an unknown code is a plain rejection, never a success and never an opt-in.

use super::redact_numbers;
use crate::retry::{Failure, retry_after};
use reqwest::header::HeaderMap;

#[derive(Debug, thiserror::Error)]
pub enum SmsError {
    /// 21610: the recipient texted STOP to this sender. Never retried; suppress the number.
    #[error("the recipient has opted out (Twilio {code})")]
    OptedOut { code: u32 },
    /// The number is invalid, unroutable or a landline (21211, 21612, 21614, 21635, 30005,
    /// 30006). Never retried; mark the number bad.
    #[error("the number cannot receive SMS (Twilio {code}): {message}")]
    Undeliverable { code: u32, message: String },
    /// Rate limits, carrier trouble, connection failures (20429, 30001, 30003, 30008, 408,
    /// 429) once the retries are used up; or a timeout or a 5xx, which are not retried because
    /// the message may have been sent.
    #[error("the SMS provider is unavailable ({}): {message}", label(*.status, *.code))]
    Transient {
        status: Option<u16>,
        code: Option<u32>,
        message: String,
        /// The request reached Twilio and its answer was lost (a timeout, a cut-off body):
        /// Twilio may have queued the message, so wait for its status callback (or look it up)
        /// instead of sending again. False when Twilio certainly did not take it.
        may_have_been_sent: bool,
    },
    /// Any other 4xx (bad credentials, a sender we do not own, a malformed request). Never
    /// retried; an operator has to act.
    #[error("the SMS provider rejected the request ({}): {message}", label(Some(*.status), *.code))]
    Rejected {
        status: u16,
        code: Option<u32>,
        message: String,
    },
    /// The configuration cannot produce a working client (raised at start-up only).
    #[error("the SMS client cannot be built: {message}")]
    Config { message: String },
}

impl SmsError {
    /// True when the request reached Twilio and its answer was lost or was a server error (a 5xx,
    /// a timeout, a body cut off): the message may be on its way, so the outcome is unknown and
    /// the send must not be repeated; a status callback settles it.
    pub fn may_have_been_sent(&self) -> bool {
        matches!(
            self,
            SmsError::Transient {
                may_have_been_sent: true,
                ..
            }
        )
    }

    /// The provider's error code, to store beside the failed message.
    pub fn code(&self) -> Option<u32> {
        match self {
            SmsError::OptedOut { code } | SmsError::Undeliverable { code, .. } => Some(*code),
            SmsError::Transient { code, .. } | SmsError::Rejected { code, .. } => *code,
            SmsError::Config { .. } => None,
        }
    }
}

fn label(status: Option<u16>, code: Option<u32>) -> String {
    match (status, code) {
        (Some(s), Some(c)) => format!("HTTP {s}, code {c}"),
        (Some(s), None) => format!("HTTP {s}"),
        (None, Some(c)) => format!("code {c}"),
        (None, None) => "no response".into(),
    }
}

const OPTED_OUT: u32 = 21610;
const UNDELIVERABLE: &[u32] = &[21211, 21612, 21614, 21635, 30005, 30006];
/// Rate limit (20429) and carrier-side codes that Twilio documents as worth another try.
const TRANSIENT: &[u32] = &[20429, 30001, 30003, 30008];
/// Server-side codes Twilio documents as a refusal to act, to be retried with back-off:
/// 20503 "Service unavailable" and 21730 "System under maintenance" (issue 30). Whatever the
/// HTTP status, nothing was created.
const NOT_TAKEN: &[u32] = &[20503, 21730];

/// Twilio's error body: `{code, message, more_info, status}`. Everything optional: a proxy
/// or a load balancer may answer instead of Twilio.
#[derive(Debug, Default, serde::Deserialize)]
struct TwilioErrorBody {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

/// Classifies a non-2xx answer: the code decides when Twilio gave one we know, else the status.
pub(super) fn classify_failure(status: u16, headers: &HeaderMap, body: &str) -> Failure<SmsError> {
    let parsed = serde_json::from_str::<TwilioErrorBody>(body).unwrap_or_default();
    let code = parsed.code.as_ref().and_then(code_number);
    let message = scrub(
        parsed
            .message
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| fallback_message(status, body)),
    );
    let retry = |code| Failure::Retry {
        error: SmsError::Transient {
            status: Some(status),
            code,
            message: message.clone(),
            may_have_been_sent: false,
        },
        retry_after: retry_after(headers),
    };
    match code {
        Some(OPTED_OUT) => Failure::Final(SmsError::OptedOut { code: OPTED_OUT }),
        Some(c) if UNDELIVERABLE.contains(&c) => Failure::Final(SmsError::Undeliverable {
            code: c,
            message: message.clone(),
        }),
        Some(c) if NOT_TAKEN.contains(&c) => retry(Some(c)),
        // A gateway or server error may come after Twilio took the message (issue 10; Twilio's
        // 20500 page says a retried send can text twice): the outcome is unknown, so it is
        // never retried blindly; a lookup or the status callback settles it.
        _ if (500..=599).contains(&status) => Failure::Final(SmsError::Transient {
            status: Some(status),
            code,
            message: message.clone(),
            may_have_been_sent: true,
        }),
        Some(c) if TRANSIENT.contains(&c) => retry(Some(c)),
        // 408: the request never fully arrived; 429: refused before anything was queued.
        _ if matches!(status, 408 | 429) => retry(code),
        _ => Failure::Final(SmsError::Rejected {
            status,
            code,
            message: message.clone(),
        }),
    }
}

/// Twilio sends codes as numbers; accept a numeric string too.
fn code_number(value: &serde_json::Value) -> Option<u32> {
    match value {
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A proxy's HTML page or an empty body: keep an excerpt so the log says something useful.
fn fallback_message(status: u16, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        body.to_owned()
    }
}

/// Short enough for a log line, and without phone numbers.
pub(super) fn scrub(message: String) -> String {
    crate::log_text::clip(redact_numbers(&message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(status: u16, body: &str) -> Failure<SmsError> {
        classify_failure(status, &HeaderMap::new(), body)
    }

    fn twilio(code: u32, status: u16, message: &str) -> String {
        serde_json::json!({"code": code, "message": message, "status": status,
            "more_info": format!("https://www.twilio.com/docs/errors/{code}")})
        .to_string()
    }

    #[test]
    fn codes_decide_before_statuses() {
        let opted = classify(
            400,
            &twilio(21610, 400, "Attempt to send to unsubscribed recipient"),
        );
        assert!(matches!(
            opted,
            Failure::Final(SmsError::OptedOut { code: 21610 })
        ));
        let invalid = classify(
            400,
            &twilio(21211, 400, "The 'To' number +15005550001 is not valid"),
        );
        let Failure::Final(SmsError::Undeliverable {
            code: 21211,
            message,
        }) = invalid
        else {
            panic!("{invalid:?}")
        };
        assert!(!message.contains("5005550001"), "{message}");
        assert!(matches!(
            classify(429, &twilio(20429, 429, "Too Many Requests")),
            Failure::Retry {
                error: SmsError::Transient {
                    status: Some(429),
                    code: Some(20429),
                    ..
                },
                ..
            }
        ));
        assert!(matches!(
            classify(
                400,
                &twilio(21606, 400, "The From phone number is not valid")
            ),
            Failure::Final(SmsError::Rejected {
                status: 400,
                code: Some(21606),
                ..
            })
        ));
    }

    #[test]
    fn statuses_decide_without_a_known_code() {
        // A 5xx may come after Twilio queued the message: unknown, never retried (issue 10).
        assert!(matches!(
            classify(503, "<html>busy</html>"),
            Failure::Final(SmsError::Transient {
                status: Some(503),
                code: None,
                may_have_been_sent: true,
                ..
            })
        ));
        assert!(matches!(
            classify(429, "slow down"),
            Failure::Retry {
                error: SmsError::Transient {
                    status: Some(429),
                    may_have_been_sent: false,
                    ..
                },
                ..
            }
        ));
        assert!(matches!(
            classify(401, &twilio(20003, 401, "Authenticate")),
            Failure::Final(SmsError::Rejected {
                status: 401,
                code: Some(20003),
                ..
            })
        ));
        assert!(matches!(
            classify(404, ""),
            Failure::Final(SmsError::Rejected {
                status: 404,
                code: None,
                ..
            })
        ));
    }

    #[test]
    fn twilio_s_documented_refusals_to_act_are_retried_whatever_the_status() {
        for (status, code) in [(503, 20503), (503, 21730), (500, 21730)] {
            assert!(
                matches!(
                    classify(status, &twilio(code, status, "Service unavailable")),
                    Failure::Retry {
                        error: SmsError::Transient {
                            may_have_been_sent: false,
                            ..
                        },
                        ..
                    }
                ),
                "{status} {code}"
            );
        }
        // Twilio's own 500 may come after the message was created.
        assert!(matches!(
            classify(500, &twilio(20500, 500, "Internal Server Error")),
            Failure::Final(SmsError::Transient {
                may_have_been_sent: true,
                ..
            })
        ));
    }

    #[test]
    fn scrub_keeps_char_boundaries() {
        let clipped = scrub("é".repeat(400));
        assert!(clipped.ends_with('…') && clipped.len() <= 303);
    }
}
