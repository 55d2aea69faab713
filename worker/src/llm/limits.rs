//! The model provider's own limits, kept by this process (issue 31): at most
//! `LLM_MAX_CONCURRENCY` requests at once, at most `LLM_TOKENS_PER_MIN` tokens a minute (a
//! bucket refilled continuously, each request drawing its prompt's estimate plus its output
//! budget), and no request while the provider's rate-limit headers say its budget is spent:
//! OpenAI's `x-ratelimit-remaining-{tokens,requests}` with `x-ratelimit-reset-*` (a duration such
//! as `6m0s` or `20ms`), Anthropic's `anthropic-ratelimit-*-remaining` with `*-reset` (an RFC 3339
//! time), and `retry-after` on a 429, 503 or 529, which pauses every request, not only the one
//! that met it.
//!
//! A wait is bounded by the attempt's time: a request the limits would hold past it fails at once
//! as a rate-limited answer, without being sent.

use reqwest::header::HeaderMap;
use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};
use tokio::{
    sync::{Semaphore, SemaphorePermit},
    time::Instant,
};

/// A longer pause than this from a header is not believed (a clock far off, a monthly cap).
const LONGEST_PAUSE: Duration = Duration::from_secs(60);

pub struct Limits {
    permits: Option<Semaphore>,
    /// Tokens a minute, and the bucket: tokens available and when it was last filled.
    budget: Option<(f64, Mutex<(f64, Instant)>)>,
    /// No request before this (the provider said its budget is spent, or asked us to wait).
    paused_until: Mutex<Option<Instant>>,
}

/// Why a request was not sent.
#[derive(Debug, PartialEq, Eq)]
pub struct NoTime(pub Duration);

impl Limits {
    pub fn new(max_concurrency: Option<usize>, tokens_per_min: Option<u64>) -> Self {
        Self {
            permits: max_concurrency.map(Semaphore::new),
            budget: tokens_per_min.map(|t| (t as f64, Mutex::new((t as f64, Instant::now())))),
            paused_until: Mutex::new(None),
        }
    }

    /// Waits (until `by` at most) for the provider's pause to end, `tokens` of the budget and a
    /// request slot. `Err(NoTime(wait))`: the limits would hold it past `by`.
    pub async fn admit(
        &self,
        tokens: u64,
        by: Instant,
    ) -> Result<Option<SemaphorePermit<'_>>, NoTime> {
        let paused = *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(until) = paused.filter(|u| *u > Instant::now()) {
            if until > by {
                return Err(NoTime(until - Instant::now()));
            }
            tokio::time::sleep_until(until).await;
        }
        if let Some((per_min, bucket)) = &self.budget {
            let ready_at = {
                let mut b = bucket.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                let (available, filled) = *b;
                let available = (available
                    + now.duration_since(filled).as_secs_f64() * per_min / 60.0)
                    .min(*per_min);
                // Drawn now, even if it must wait: later requests queue behind it.
                let left = available - tokens as f64;
                *b = (left, now);
                now + Duration::from_secs_f64((-left).max(0.0) * 60.0 / per_min)
            };
            if ready_at > by {
                self.refund(tokens);
                return Err(NoTime(ready_at - Instant::now()));
            }
            tokio::time::sleep_until(ready_at).await;
        }
        match &self.permits {
            None => Ok(None),
            Some(s) => match tokio::time::timeout_at(by, s.acquire()).await {
                Ok(Ok(permit)) => Ok(Some(permit)),
                _ => {
                    self.refund(tokens);
                    Err(NoTime(Duration::ZERO))
                }
            },
        }
    }

    fn refund(&self, tokens: u64) {
        if let Some((_, bucket)) = &self.budget {
            bucket.lock().unwrap_or_else(PoisonError::into_inner).0 += tokens as f64;
        }
    }

    /// Reads an answer's rate-limit headers: a spent budget, or a `retry-after` on a refusal,
    /// pauses every request until the provider's reset.
    pub fn observe(&self, status: u16, headers: &HeaderMap) {
        let mut pause = spent_until(headers);
        if matches!(status, 429 | 503 | 529) {
            pause = pause.max(crate::retry::retry_after(headers));
        }
        if let Some(wait) = pause.filter(|w| !w.is_zero()) {
            let until = Instant::now() + wait.min(LONGEST_PAUSE);
            let mut p = self
                .paused_until
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if p.is_none_or(|at| at < until) {
                tracing::info!(
                    pause_s = wait.as_secs_f64(),
                    "the model provider's rate limit is spent; pausing requests until its reset"
                );
                *p = Some(until);
            }
        }
    }
}

/// The longest wait a spent budget in the headers asks for: a `remaining` of 0 with its reset.
fn spent_until(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: String| headers.get(name)?.to_str().ok().map(str::trim);
    let spent = |name: String| header(name).and_then(|v| v.parse::<u64>().ok()) == Some(0);
    let mut wait = None;
    for kind in ["tokens", "requests"] {
        if spent(format!("x-ratelimit-remaining-{kind}")) {
            wait = wait.max(header(format!("x-ratelimit-reset-{kind}")).and_then(go_duration));
        }
    }
    for kind in ["tokens", "input-tokens", "output-tokens", "requests"] {
        if spent(format!("anthropic-ratelimit-{kind}-remaining")) {
            let reset = header(format!("anthropic-ratelimit-{kind}-reset"))
                .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok());
            let left = reset.map(|at| {
                (at.to_utc() - grove_common::clock::wall())
                    .to_std()
                    .unwrap_or_default()
            });
            wait = wait.max(left);
        }
    }
    wait
}

/// OpenAI's reset durations: `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
fn go_duration(v: &str) -> Option<Duration> {
    let mut total = 0.0;
    let mut rest = v;
    while !rest.is_empty() {
        let split = rest.find(|c: char| c.is_ascii_alphabetic())?;
        let number: f64 = rest[..split].parse().ok()?;
        let unit_end = rest[split..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .map_or(rest.len(), |i| split + i);
        total += number
            * match &rest[split..unit_end] {
                "h" => 3600.0,
                "m" => 60.0,
                "s" => 1.0,
                "ms" => 0.001,
                _ => return None,
            };
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).expect("name"),
                    HeaderValue::from_str(v).expect("value"),
                )
            })
            .collect()
    }

    #[test]
    fn openai_reset_durations_parse() {
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(go_duration("soon"), None);
    }

    #[test]
    fn a_spent_budget_is_read_from_either_providers_headers() {
        let openai = headers(&[
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "1.5s"),
            ("x-ratelimit-remaining-requests", "10"),
            ("x-ratelimit-reset-requests", "9s"),
        ]);
        assert_eq!(spent_until(&openai), Some(Duration::from_millis(1500)));
        let at = grove_common::clock::wall() + chrono::Duration::seconds(30);
        let anthropic = headers(&[
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", &at.to_rfc3339()),
        ]);
        let wait = spent_until(&anthropic).expect("spent");
        assert!(
            wait > Duration::from_secs(28) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        let fine = headers(&[("x-ratelimit-remaining-tokens", "5000")]);
        assert_eq!(spent_until(&fine), None);
    }

    #[tokio::test]
    async fn the_limits_hold_requests_and_refuse_one_they_would_hold_past_its_time() {
        // 600 tokens a minute is 10 a second: with all 600 drawn, the next 400 are 40 s away.
        let limits = Limits::new(Some(1), Some(600));
        let soon = Instant::now() + Duration::from_millis(200);
        let first = limits.admit(600, soon).await.expect("within the budget");
        assert!(first.is_some(), "holds the only slot");
        // The slot is taken: a second request waits for it and gives up at its time.
        assert!(limits.admit(0, soon).await.is_err());
        drop(first);
        let Err(NoTime(wait)) = limits.admit(400, soon).await else {
            panic!("the budget is spent");
        };
        assert!(wait > Duration::from_secs(30), "{wait:?}");
        // A 429 with retry-after pauses every request.
        limits.observe(429, &headers(&[("retry-after", "5")]));
        assert!(limits.admit(0, soon).await.is_err());
    }
}
