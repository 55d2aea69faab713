//! What the doctor asks a facilitator: `GET /supported` (our scheme and network listed; no
//! credentials needed), and whether it accepts our credentials — a `POST /verify` of an empty
//! body with them: refused credentials answer 401/403 before the body is read, accepted ones get
//! the body refused. Nothing is verified or settled either way.

use super::{FacilitatorError, HttpFacilitator};
use reqwest::{StatusCode, header::AUTHORIZATION};
use serde_json::Value;

/// What `/supported` lists for one payment kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupportedKind {
    pub version: u64,
    pub scheme: String,
    pub network: String,
}

impl HttpFacilitator {
    /// The payment kinds the facilitator lists (`{kinds: [{x402Version, scheme, network}]}`).
    pub async fn supported(&self) -> Result<Vec<SupportedKind>, FacilitatorError> {
        let response = self
            .client
            .get(format!("{}/supported", self.base_url))
            .send()
            .await
            .map_err(|e| FacilitatorError::Transport(e.without_url().to_string()))?;
        let status = response.status();
        let body: Value = match response.json().await {
            Ok(body) if status.is_success() => body,
            Ok(_) | Err(_) => {
                return Err(FacilitatorError::Status {
                    status: status.as_u16(),
                    body_excerpt: String::new(),
                });
            }
        };
        let kinds = body
            .get("kinds")
            .and_then(Value::as_array)
            .ok_or_else(|| FacilitatorError::Decode("no `kinds` list".into()))?;
        Ok(kinds
            .iter()
            .map(|k| SupportedKind {
                version: k.get("x402Version").and_then(Value::as_u64).unwrap_or(0),
                scheme: text(k, "scheme"),
                network: text(k, "network"),
            })
            .collect())
    }

    /// `Ok(None)`: no credentials are configured; `Ok(Some(accepted))` otherwise.
    pub async fn credentials_accepted(&self) -> Result<Option<bool>, FacilitatorError> {
        if !self.auth.is_some() {
            return Ok(None);
        }
        let url = format!("{}/verify", self.base_url);
        let header = self.auth.header_for("POST", &url).ok_or_else(|| {
            FacilitatorError::Transport("could not build the Authorization header".into())
        })?;
        let status = self
            .client
            .post(&url)
            .header(AUTHORIZATION, header)
            .json(&serde_json::json!({}))
            .send()
            .await
            .map_err(|e| FacilitatorError::Transport(e.without_url().to_string()))?
            .status();
        Ok(Some(
            status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
        ))
    }

    /// Which variables the credentials come from.
    pub fn credentials_kind(&self) -> &'static str {
        self.auth.kind()
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}
