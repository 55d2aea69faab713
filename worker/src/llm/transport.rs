//! HTTP for both wire formats: one attempt (POST a JSON body, read the whole answer, classify a
//! failure) and the provider's retry policy around it, bounded by the call's deadline.

use super::LlmError;
use super::error::classify_failure;
use super::limits::{Limits, NoTime};
use crate::log_text::error_chain;
use crate::retry::{self, Failure, RetryPolicy};
use grove_common::config::Http2;
use reqwest::header::HeaderMap;
use std::{future::Future, time::Duration};
use tokio::time::Instant;

/// A client shared by every call of one provider (connection pooling matters with TLS). With
/// `LLM_HTTP2=prior-knowledge` it speaks HTTP/2 from the first byte, so over plain `http://` the
/// calls in flight share a few connections as streams rather than holding a socket each.
pub(super) fn client(http2: Http2, request_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    let builder = grove_common::http_client::builder()
        .user_agent(concat!("grove-worker/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(request_timeout.min(Duration::from_secs(10)));
    http2.apply(builder).build().map_err(|e| LlmError::Config {
        message: error_chain(&e),
    })
}

/// Checks the configured base URL once, so a typo fails at start-up rather than on every call,
/// and keeps it parsed: a URL given as text is parsed again on every request.
pub(super) fn endpoint(base_url: &str, path: &str) -> Result<reqwest::Url, LlmError> {
    let url = format!("{}{path}", base_url.trim_end_matches('/'));
    match reqwest::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(parsed),
        _ => Err(LlmError::Config {
            message: "LLM_BASE_URL must be an http(s) URL".to_owned(),
        }),
    }
}

/// Where one attempt goes, and the limits it keeps.
pub(super) struct Target<'a> {
    pub client: &'a reqwest::Client,
    pub url: &'a reqwest::Url,
    pub headers: &'a HeaderMap,
    pub limits: &'a Limits,
}

/// One attempt: the body of a 2xx answer, or the classified failure for any other status. It
/// waits for the provider's limits first (`output_tokens`, the answer's budget, with the
/// prompt's estimate, is drawn from the token budget), within `timeout`.
pub(super) async fn post_json(
    to: &Target<'_>,
    body: &(impl serde::Serialize + ?Sized + Sync),
    output_tokens: u64,
    timeout: Duration,
) -> Result<String, Failure<LlmError>> {
    let began = Instant::now();
    let body = serde_json::to_string(body).map_err(|e| {
        Failure::Final(LlmError::BadRequest {
            status: 0,
            message: format!("the request could not be written: {e}"),
        })
    })?;
    // About four bytes of JSON a token: the estimate a budget needs before the answer counts.
    let tokens = body.len() as u64 / 4 + output_tokens;
    let _slot = to
        .limits
        .admit(tokens, began + timeout)
        .await
        .map_err(|NoTime(wait)| {
            Failure::Final(LlmError::Upstream {
                status: Some(429),
                message: format!(
                    "the provider's rate limits hold this request {:.1} s, past its deadline",
                    wait.as_secs_f64()
                ),
            })
        })?;
    let response = to
        .client
        .post(to.url.clone())
        .headers(to.headers.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(sent_once(body))
        .timeout(timeout.saturating_sub(began.elapsed()))
        .send()
        .await
        .map_err(transient)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    to.limits.observe(status, &headers);
    // The timeout covers the body too, so a server that stalls mid-answer is retried as well.
    let body = response.text().await.map_err(transient)?;
    if (200..300).contains(&status) {
        Ok(body)
    } else {
        Err(classify_failure(status, &headers, &body))
    }
}

/// The request body as one that reqwest keeps no copy of. A plain body is held (shared, not
/// copied) by reqwest's redirect and retry layers until the answer arrives, so the prompt with its
/// schema, kilobytes a call, stayed in memory for the whole wait on the model; this one is freed
/// once written. Neither layer needs it: `with_retries` builds each attempt afresh, and a model
/// API answers a POST rather than redirecting it.
fn sent_once(body: String) -> reqwest::Body {
    reqwest::Body::wrap(body)
}

/// Runs `attempt` under the provider's retry policy until `deadline`. Returns the outcome and
/// the HTTP attempts made. A transient failure that the deadline cut short is
/// [`LlmError::Deadline`]: unlike a server that kept failing, its billing is unknown.
pub(super) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    deadline: Option<Instant>,
    provider: &'static str,
    attempt: F,
) -> (Result<T, LlmError>, u32)
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<T, Failure<LlmError>>>,
{
    if deadline.is_some_and(|d| Instant::now() >= d) {
        let message = "no time was left to ask the model".to_owned();
        return (Err(LlmError::Deadline { message }), 0);
    }
    let label = retry::Label {
        provider,
        action: "llm call",
    };
    let outcome = retry::run(policy, deadline, label, attempt).await;
    let past_deadline = deadline.is_some_and(|d| Instant::now() >= d);
    let result = match outcome.result {
        Err(LlmError::Upstream { message, .. }) if outcome.out_of_time || past_deadline => {
            Err(LlmError::Deadline { message })
        }
        other => other,
    };
    (result, outcome.attempts)
}

fn transient(error: reqwest::Error) -> Failure<LlmError> {
    // The URL is left out: a base URL may carry credentials.
    let error = error.without_url();
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "transport error"
    };
    Failure::Retry {
        error: LlmError::Upstream {
            status: None,
            message: format!("{kind}: {}", error_chain(&error)),
        },
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The body reqwest keeps no copy of still goes out whole, with its length (not chunked:
    /// some API gateways refuse a chunked POST), and its answer comes back.
    #[tokio::test]
    async fn a_body_sent_once_goes_out_whole_with_its_length() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            // Read until the head and a body of the announced length are in.
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client hung up before sending the whole request");
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head.lines().find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    });
                    if length.is_none_or(|len| body.len() >= len) {
                        socket
                            .write_all(
                                b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{\"ok\":true}",
                            )
                            .await
                            .unwrap();
                        return (head.to_ascii_lowercase(), body.to_owned(), length);
                    }
                }
            }
        });
        let client = client(Http2::Auto, Duration::from_secs(5)).unwrap();
        let limits = Limits::new(None, None);
        let headers = HeaderMap::new();
        let url = reqwest::Url::parse(&url).unwrap();
        let to = Target {
            client: &client,
            url: &url,
            headers: &headers,
            limits: &limits,
        };
        let prompt =
            serde_json::json!({"messages": [{"role": "user", "content": "x".repeat(20_000)}]});
        let answer = post_json(&to, &prompt, 100, Duration::from_secs(5)).await;
        assert_eq!(answer.ok().as_deref(), Some("{\"ok\":true}"));
        let (head, body, length) = server.await.unwrap();
        assert!(!head.contains("transfer-encoding"), "{head}");
        assert_eq!(length, Some(body.len()));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
            prompt
        );
    }
}
