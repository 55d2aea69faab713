//! One HTTP attempt: POST a JSON body, read the whole answer, and turn transport trouble into a
//! transient failure. Status handling is left to the callers, which know their wire format.

use super::LlmError;
use super::error::classify_failure;
use super::retry::Failure;
use crate::log_text::error_chain;
use reqwest::header::HeaderMap;
use std::time::Duration;

#[derive(Debug)]
pub(super) struct RawResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

/// A client shared by every call of one provider (connection pooling matters with TLS).
pub(super) fn client(request_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .user_agent(concat!("grove-worker/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(request_timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| LlmError::Config {
            message: error_chain(&e),
        })
}

/// Checks the configured base URL once, so a typo fails at start-up rather than on every call.
pub(super) fn endpoint(base_url: &str, path: &str) -> Result<String, LlmError> {
    let url = format!("{}{path}", base_url.trim_end_matches('/'));
    match reqwest::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(url),
        _ => Err(LlmError::Config {
            message: "LLM_BASE_URL must be an http(s) URL".to_owned(),
        }),
    }
}

/// Answers the 2xx response, or the classified failure for any other status.
pub(super) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: HeaderMap,
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<RawResponse, Failure> {
    let response = client
        .post(url)
        .headers(headers)
        .json(body)
        .timeout(timeout)
        .send()
        .await
        .map_err(transient)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    // The timeout covers the body too, so a server that stalls mid-answer is retried as well.
    let body = response.text().await.map_err(transient)?;
    let raw = RawResponse {
        status,
        headers,
        body,
    };
    if (200..300).contains(&status) {
        Ok(raw)
    } else {
        Err(classify_failure(&raw))
    }
}

fn transient(error: reqwest::Error) -> Failure {
    // The URL is left out: a base URL may carry credentials.
    let error = error.without_url();
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "transport error"
    };
    Failure::Transient {
        status: None,
        message: format!("{kind}: {}", error_chain(&error)),
        retry_after: None,
    }
}
