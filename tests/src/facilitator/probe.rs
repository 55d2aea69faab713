//! What the doctor asks the fake facilitator: `GET /supported` (no credentials, as at CDP) and
//! `POST /verify`, which checks the credentials before the body, like a real facilitator: wrong
//! ones are 401, right ones get the empty body refused with 400.

use super::{CdpCheck, FakeFacilitator, Inner, check_cdp, read, write};
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode, header::AUTHORIZATION},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use std::sync::Arc;

impl FakeFacilitator {
    /// What `/supported` lists from now on: `(x402Version, scheme, network)`. By default, exact
    /// on Base in both versions.
    pub fn set_supported(&self, kinds: &[(u64, &str, &str)]) {
        let kinds: Vec<Value> = kinds
            .iter()
            .map(|(v, scheme, network)| json!({"x402Version": v, "scheme": scheme, "network": network}))
            .collect();
        write(&self.inner.supported, |s| *s = Some(kinds));
    }
}

pub(super) async fn supported(State(inner): State<Arc<Inner>>) -> Response {
    let kinds = read(&inner.supported).unwrap_or_else(|| {
        vec![
            json!({"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}),
            json!({"x402Version": 1, "scheme": "exact", "network": "base"}),
        ]
    });
    Json(json!({"kinds": kinds, "extensions": [], "signers": {}})).into_response()
}

pub(super) async fn verify(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    let auth = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if let Some(expected) = read(&inner.expected_auth)
        && auth != Some(expected.as_str())
    {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "unauthorized"})),
        )
            .into_response();
    }
    if let Some(check) = read(&inner.expected_cdp) {
        let for_verify = CdpCheck {
            uri: check.uri.replace("/settle", "/verify"),
            ..check
        };
        if let Err(problem) = check_cdp(&for_verify, auth) {
            return (StatusCode::UNAUTHORIZED, Json(json!({"error": problem}))).into_response();
        }
    }
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"isValid": false, "invalidReason": "invalid_payload"})),
    )
        .into_response()
}
