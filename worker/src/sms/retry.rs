//! Send retries: capped exponential backoff with full jitter, honouring `Retry-After`. Only
//! failures where the provider certainly did not take the message are retried, because a
//! second attempt after an accepted one texts the customer twice.

use super::SmsError;
use std::{future::Future, time::Duration};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// HTTP attempts per send, the first included (0 is treated as 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    /// Caps every delay, the server's hint included.
    pub max_delay: Duration,
    /// Deadline of one HTTP attempt, from connecting to the last body byte.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    /// Twilio answers a create in well under a second; a send job should give up in under a
    /// minute and let the scheduler try again in the next window.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            request_timeout: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    /// The pause before attempt `failed + 1`: the server's positive hint if it gave one,
    /// otherwise uniformly random up to `base · 2^(failed-1)`; both capped by `max_delay`.
    pub(super) fn delay(&self, failed: u32, hint: Option<Duration>) -> Duration {
        crate::backoff::delay(self.base_delay, self.max_delay, failed, hint)
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// The provider did not take the message and may on another attempt. The error (always
    /// `SmsError::Transient`) is what the caller gets when attempts run out.
    Retry {
        error: SmsError,
        retry_after: Option<Duration>,
    },
    /// Returned without another attempt.
    Final(SmsError),
}

/// Runs `attempt` until it succeeds, fails for good, or the attempts are used up. Returns the
/// outcome and the number of HTTP attempts made.
pub(super) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    mut attempt: F,
) -> (Result<T, SmsError>, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut made = 0;
    loop {
        made += 1;
        let (error, hint) = match attempt().await {
            Ok(value) => return (Ok(value), made),
            Err(Failure::Final(error)) => return (Err(error), made),
            Err(Failure::Retry { error, retry_after }) => (error, retry_after),
        };
        if made >= max_attempts {
            tracing::warn!(provider, attempts = made, %error, "sms send failed; no attempts left");
            return (Err(error), made);
        }
        let delay = policy.delay(made, hint);
        // The error text is the provider's, already scrubbed of numbers; never the message.
        tracing::warn!(
            provider,
            attempt = made,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            server_hint = hint.is_some(),
            %error,
            "sms send failed; retrying"
        );
        tokio::time::sleep(delay).await;
    }
}

pub(super) use crate::backoff::retry_after;
