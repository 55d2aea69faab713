//! Provider retries, one `backon` policy per provider. What is shared lives here: the policy's
//! numbers, honouring the server's `Retry-After`, jitter, the attempt count and an overall
//! deadline. Which failures are worth another attempt is each provider's own decision, made when
//! it classifies a failure as [`Failure::Retry`] or [`Failure::Final`].

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::HeaderMap;
use std::{
    fmt::Display,
    future::Future,
    sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed},
    time::{Duration, SystemTime},
};
use tokio::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// HTTP attempts per call, the first included (0 is treated as 1).
    pub max_attempts: u32,
    /// The first pause; each later one doubles, plus up to as much again of random jitter.
    pub base_delay: Duration,
    /// Caps every pause. A server that asks for a longer wait is not retried early: its
    /// failure is returned instead.
    pub max_delay: Duration,
    /// Deadline of one HTTP attempt, from connecting to the last body byte.
    pub request_timeout: Duration,
}

impl RetryPolicy {
    /// Model calls: a slow answer is normal, overload (429, 529) is common and short-lived.
    pub const LLM: Self = Self {
        max_attempts: 4,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(20),
        request_timeout: Duration::from_secs(120),
    };

    /// Twilio answers a create in well under a second; a send job should give up in under a
    /// minute and let the scheduler try again in the next window.
    pub const SMS: Self = Self {
        max_attempts: 3,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(10),
        request_timeout: Duration::from_secs(15),
    };

    fn backoff(&self) -> ExponentialBuilder {
        let retries = usize::try_from(self.max_attempts.max(1) - 1).unwrap_or(usize::MAX);
        ExponentialBuilder::new()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(retries)
            // Clients that failed together spread out instead of retrying in step.
            .with_jitter()
    }
}

/// How one attempt failed, as the provider classified it.
#[derive(Debug)]
pub enum Failure<E> {
    /// The provider certainly did not act on the request and may on another attempt; `error`
    /// is what the caller gets when no attempt is left.
    Retry {
        error: E,
        retry_after: Option<Duration>,
    },
    /// Returned as is, without another attempt.
    Final(E),
}

impl<E> Failure<E> {
    fn into_error(self) -> E {
        match self {
            Failure::Retry { error, .. } | Failure::Final(error) => error,
        }
    }
}

/// What a run of attempts came to.
#[derive(Debug)]
pub struct Outcome<T, E> {
    pub result: Result<T, E>,
    /// HTTP attempts made, the first included.
    pub attempts: u32,
    /// The last failure was worth another attempt, but the deadline left no time for one.
    pub out_of_time: bool,
}

/// Names a run in its log lines: the provider, and what failed ("llm call", "sms send").
#[derive(Clone, Copy, Debug)]
pub struct Label {
    pub provider: &'static str,
    pub action: &'static str,
}

/// Runs `attempt` under `policy` until it succeeds, fails for good, runs out of attempts, or
/// `deadline` would pass before the next attempt could start. `attempt` gets the time it may
/// take: the policy's request timeout, shortened to what is left before the deadline.
pub async fn run<T, E, F, Fut>(
    policy: &RetryPolicy,
    deadline: Option<Instant>,
    label: Label,
    mut attempt: F,
) -> Outcome<T, E>
where
    E: Display,
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<T, Failure<E>>>,
{
    // Atomics rather than cells: the future must stay `Send` for the providers' async traits.
    let made = AtomicU32::new(0);
    let out_of_time = AtomicBool::new(false);
    let result = (|| {
        made.fetch_add(1, Relaxed);
        let left = deadline.map_or(policy.request_timeout, |d| {
            d.saturating_duration_since(Instant::now())
        });
        attempt(policy.request_timeout.min(left))
    })
    .retry(policy.backoff())
    .sleep(tokio::time::sleep)
    .when(|failure| matches!(failure, Failure::Retry { .. }))
    .adjust(|failure, backoff| {
        let Failure::Retry { retry_after, .. } = failure else {
            return None;
        };
        // None: the policy's attempts are used up.
        let backoff = backoff?;
        let pause = match retry_after.filter(|hint| !hint.is_zero()) {
            Some(hint) if hint > policy.max_delay => return None,
            Some(hint) => hint,
            None => backoff.min(policy.max_delay),
        };
        if deadline.is_some_and(|d| Instant::now() + pause >= d) {
            out_of_time.store(true, Relaxed);
            return None;
        }
        Some(pause)
    })
    .notify(|failure, pause| {
        let Failure::Retry { error, retry_after } = failure else {
            return;
        };
        // The provider's message, never the request: it can quote the caller's text otherwise.
        tracing::warn!(
            provider = label.provider,
            attempt = made.load(Relaxed),
            delay_ms = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
            server_hint = retry_after.is_some(),
            %error,
            "{} failed; retrying",
            label.action
        );
    })
    .await;
    let attempts = made.load(Relaxed);
    if let Err(Failure::Retry { error, .. }) = &result {
        tracing::warn!(
            provider = label.provider,
            attempts,
            %error,
            out_of_time = out_of_time.load(Relaxed),
            "{} failed; no attempt left",
            label.action
        );
    }
    Outcome {
        result: result.map_err(Failure::into_error),
        attempts,
        out_of_time: out_of_time.load(Relaxed),
    }
}

/// The server's retry hint: `retry-after-ms` (OpenAI), else `retry-after` as seconds or an
/// HTTP date. A date in the past means "now"; anything unreadable means no hint.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests;
