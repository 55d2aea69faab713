//! Twilio webhooks: delivery reports and inbound messages. Each verifies `X-Twilio-Signature`
//! against the configured public URL (never the request's Host), in constant time, and answers
//! 403 without touching anything when it does not match.

mod inbound;
mod status;

pub(super) use inbound::inbound;
pub(super) use status::status_callback;

use crate::{error::ApiError, state::AppState};
use axum::{
    body::Bytes,
    http::{HeaderMap, Uri, header},
    response::{IntoResponse, Response},
};
use grove_common::twilio;

/// Parses and authenticates a Twilio form post.
pub(super) fn verified(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
    body: &Bytes,
) -> Result<Vec<(String, String)>, ApiError> {
    let Some(token) = state
        .config
        .twilio
        .as_ref()
        .map(|t| t.auth_token.expose().to_owned())
    else {
        // The outbox sends nothing, so nothing can legitimately report on it.
        return Err(ApiError::Forbidden);
    };
    let params: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|_| ApiError::Forbidden)?;
    let signature = headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut url = state.config.absolute(uri.path());
    if let Some(q) = uri.query() {
        url.push('?');
        url.push_str(q);
    }
    if signature.is_empty() || !twilio::verify(&token, &url, &params, signature) {
        tracing::warn!(path = uri.path(), "webhook signature mismatch");
        return Err(ApiError::Forbidden);
    }
    Ok(params)
}

pub(super) fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(super) fn twiml() -> Response {
    (
        [(header::CONTENT_TYPE, "text/xml")],
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>",
    )
        .into_response()
}
