use super::*;
use reqwest::header::HeaderValue;
use std::cell::RefCell;

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

const LABEL: Label = Label {
    provider: "test",
    action: "test call",
};

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(400),
        request_timeout: Duration::from_secs(30),
    }
}

/// Plays `script` (one entry per attempt; the last repeats) and records each attempt's timeout.
async fn play(
    policy: &RetryPolicy,
    deadline: Option<Instant>,
    script: Vec<Result<u32, Failure<String>>>,
) -> (Outcome<u32, String>, Vec<Duration>) {
    let script = RefCell::new(script);
    let timeouts = RefCell::new(Vec::new());
    let outcome = run(policy, deadline, LABEL, |timeout| {
        timeouts.borrow_mut().push(timeout);
        let mut s = script.borrow_mut();
        let next = if s.len() > 1 {
            s.remove(0)
        } else {
            match &s[0] {
                Ok(v) => Ok(*v),
                Err(Failure::Retry { error, retry_after }) => Err(Failure::Retry {
                    error: error.clone(),
                    retry_after: *retry_after,
                }),
                Err(Failure::Final(e)) => Err(Failure::Final(e.clone())),
            }
        };
        async move { next }
    })
    .await;
    (outcome, timeouts.into_inner())
}

fn retry(hint_ms: Option<u64>) -> Result<u32, Failure<String>> {
    Err(Failure::Retry {
        error: "busy".into(),
        retry_after: hint_ms.map(Duration::from_millis),
    })
}

#[tokio::test]
async fn retryable_failures_are_retried_up_to_the_policy_and_final_ones_never() {
    let (out, _) = play(&policy(3), None, vec![retry(None), retry(None), Ok(7)]).await;
    assert_eq!((out.result.unwrap(), out.attempts), (7, 3));

    let (out, _) = play(&policy(3), None, vec![retry(None)]).await;
    assert_eq!((out.result.unwrap_err(), out.attempts), ("busy".into(), 3));
    assert!(!out.out_of_time);

    let (out, _) = play(&policy(3), None, vec![Err(Failure::Final("no".into()))]).await;
    assert_eq!((out.result.unwrap_err(), out.attempts), ("no".into(), 1));

    let (out, _) = play(&policy(0), None, vec![retry(None)]).await;
    assert_eq!(out.attempts, 1, "0 attempts means one");
}

#[tokio::test]
async fn a_server_hint_is_waited_out_and_one_longer_than_the_cap_ends_the_retries() {
    let started = std::time::Instant::now();
    let (out, _) = play(&policy(2), None, vec![retry(Some(250)), Ok(1)]).await;
    assert_eq!(out.attempts, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "hint honoured"
    );

    let (out, _) = play(&policy(4), None, vec![retry(Some(5_000)), Ok(1)]).await;
    assert_eq!(
        (out.attempts, out.result.is_err()),
        (1, true),
        "a server that asks for more than max_delay is not retried early"
    );
}

#[tokio::test]
async fn the_deadline_shortens_each_attempt_and_stops_a_retry_that_would_cross_it() {
    let deadline = Instant::now() + Duration::from_millis(300);
    let (out, timeouts) = play(&policy(5), Some(deadline), vec![retry(Some(200))]).await;
    assert_eq!(
        out.attempts, 2,
        "one retry fits, the next would cross the deadline"
    );
    assert!(out.out_of_time);
    assert!(timeouts[0] <= Duration::from_millis(300), "{timeouts:?}");
    assert!(timeouts[1] <= Duration::from_millis(100), "{timeouts:?}");
}
