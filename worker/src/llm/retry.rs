//! Transport retries: capped exponential backoff with full jitter, honouring the server's
//! `retry-after-ms` / `retry-after` hint. Only transient failures (429, 5xx, 529, timeouts,
//! connection errors) are retried; everything the model or the account decided is final.

use super::LlmError;
use std::{future::Future, time::Duration};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// HTTP attempts per call, the first included (0 is treated as 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    /// Caps every delay, the server's hint included.
    pub max_delay: Duration,
    /// Deadline of one HTTP attempt, from connecting to the last body byte.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            request_timeout: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The pause before attempt `failed + 1`: the server's hint when it gave a positive one,
    /// otherwise a uniformly random delay up to `base · 2^(failed-1)`; both capped by `max_delay`.
    pub(super) fn delay(&self, failed: u32, hint: Option<Duration>) -> Duration {
        crate::backoff::delay(self.base_delay, self.max_delay, failed, hint)
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// Worth another attempt; becomes `LlmError::Upstream` when attempts run out.
    Transient {
        status: Option<u16>,
        message: String,
        retry_after: Option<Duration>,
    },
    /// Returned as is, without another attempt.
    Final(LlmError),
}

/// Runs `attempt` until it succeeds, fails for good, or the policy's attempts are used up.
/// Returns the outcome and the number of HTTP attempts made.
pub(super) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    mut attempt: F,
) -> (Result<T, LlmError>, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut made = 0;
    loop {
        made += 1;
        let (status, message, hint) = match attempt().await {
            Ok(value) => return (Ok(value), made),
            Err(Failure::Final(error)) => return (Err(error), made),
            Err(Failure::Transient {
                status,
                message,
                retry_after,
            }) => (status, message, retry_after),
        };
        if made >= max_attempts {
            tracing::warn!(provider, status, attempts = made, error = %message, "llm call failed; no attempts left");
            return (Err(LlmError::Upstream { status, message }), made);
        }
        let delay = policy.delay(made, hint);
        // The provider's message, never the request: it can quote the caller's text otherwise.
        tracing::warn!(
            provider,
            status,
            attempt = made,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            server_hint = hint.is_some(),
            error = %message,
            "llm call failed; retrying"
        );
        tokio::time::sleep(delay).await;
    }
}

pub(super) use crate::backoff::retry_after;
