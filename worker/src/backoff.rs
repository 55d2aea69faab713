//! What both provider clients (LLM and SMS) share about retrying: the jittered, capped
//! exponential delay, and reading the server's retry hint. Each client keeps its own policy
//! defaults and its own rules for which failures are worth another attempt.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// The pause before attempt `failed + 1`: the server's hint when it gave a positive one,
/// otherwise a uniformly random delay up to `base · 2^(failed-1)`; both capped by `max`.
pub fn delay(base: Duration, max: Duration, failed: u32, hint: Option<Duration>) -> Duration {
    if let Some(hint) = hint.filter(|h| !h.is_zero()) {
        return hint.min(max);
    }
    let factor = 2u32.saturating_pow(failed.saturating_sub(1));
    let ceiling = base.saturating_mul(factor).min(max);
    // Full jitter: clients that failed together spread out instead of retrying in step.
    let ceiling_ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(rand::random_range(0..=ceiling_ms))
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
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let ms = headers(&[("retry-after-ms", "250"), ("retry-after", "9")]);
        assert_eq!(retry_after(&ms), Some(Duration::from_millis(250)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        let in_30s = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let from_date = retry_after(&headers(&[("retry-after", &in_30s)])).unwrap();
        assert!(from_date > Duration::from_secs(27) && from_date <= Duration::from_secs(30));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn delays_are_jittered_below_a_capped_exponential_ceiling() {
        let (base, max) = (Duration::from_millis(100), Duration::from_millis(350));
        for _ in 0..100 {
            assert!(delay(base, max, 1, None) <= Duration::from_millis(100));
            assert!(delay(base, max, 2, None) <= Duration::from_millis(200));
            assert!(delay(base, max, 30, None) <= Duration::from_millis(350));
        }
        assert_eq!(
            delay(base, max, 1, Some(Duration::from_secs(60))),
            Duration::from_millis(350)
        );
        assert_eq!(
            delay(base, max, 1, Some(Duration::from_millis(120))),
            Duration::from_millis(120)
        );
    }
}
