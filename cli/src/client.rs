//! The admin API over HTTP: a bearer token on every request, JSON both ways.

use serde_json::Value;
use std::time::Duration;

pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

/// Why a command failed.
pub enum Failure {
    /// The server answered with an error status (its JSON error body).
    Refused { status: u16, body: Value },
    /// No answer, or one that is not JSON.
    Unreachable(String),
}

impl Client {
    pub fn new(base: &str, token: &str) -> Result<Self, String> {
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(format!(
                "ADMIN_URL must start with http:// or https://, got {base:?}"
            ));
        }
        // reqwest is built without a default TLS provider (the workspace's choice): ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| format!("could not build an HTTP client: {e}"))?;
        Ok(Self {
            http,
            base: base.to_owned(),
            token: token.to_owned(),
        })
    }

    pub async fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, Failure> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| Failure::Unreachable(format!("could not reach {}: {e}", self.base)))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| Failure::Unreachable(format!("the answer was cut off: {e}")))?;
        let body: Value = serde_json::from_str(&text).map_err(|_| {
            Failure::Unreachable(format!(
                "{} answered {status} with something that is not JSON: is ADMIN_URL the admin listener?",
                self.base
            ))
        })?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(Failure::Refused {
                status: status.as_u16(),
                body,
            })
        }
    }
}
