//! The edge of a paid POST: content type, size limit, JSON parse, and the headers that steer it.
//! Each check fails with its own status (415, 413, 400, 422) before any payment logic runs.

use crate::error::ApiError;
use axum::{
    body::Body,
    http::{HeaderMap, Uri, header},
};
use serde_json::Value;

/// Bodies above 2 MiB are refused (CONTRACT 5).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Reads and parses a JSON body, refusing wrong media types, oversize bodies and non-JSON.
pub async fn json_body(headers: &HeaderMap, body: Body) -> Result<Value, ApiError> {
    if !is_json_media_type(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES));
    }
    // Chunked bodies carry no length up front; the limit is enforced while reading.
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(MAX_BODY_BYTES))?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))
}

/// `application/json`, with or without parameters, or any `+json` type.
fn is_json_media_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// A validated `Idempotency-Key`: 1 to 255 printable ASCII characters (CONTRACT 4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const HEADER: &'static str = "idempotency-key";

    pub fn parse(raw: &[u8]) -> Result<Self, ApiError> {
        if raw.is_empty() {
            return Err(ApiError::InvalidIdempotencyKey("must not be empty"));
        }
        if raw.len() > 255 {
            return Err(ApiError::InvalidIdempotencyKey(
                "must be at most 255 characters",
            ));
        }
        if !raw.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(ApiError::InvalidIdempotencyKey("must be printable ASCII"));
        }
        // Every byte is printable ASCII, so this conversion cannot lose anything.
        Ok(Self(String::from_utf8_lossy(raw).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key from the headers, if one was sent.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        headers
            .get(Self::HEADER)
            .map(|v| Self::parse(v.as_bytes()))
            .transpose()
    }
}

/// The free sandbox is selected by `x-{service}-sandbox: 1|true` or `?sandbox=1|true`.
pub fn wants_sandbox(headers: &HeaderMap, uri: &Uri, header_name: &str) -> bool {
    let truthy = |v: &str| v == "1" || v.eq_ignore_ascii_case("true");
    let by_header = headers
        .get(header_name)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| truthy(v.trim()));
    let by_query = uri.query().is_some_and(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .any(|(k, v)| k == "sandbox" && truthy(v))
    });
    by_header || by_query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_are_one_to_255_printable_ascii() {
        assert!(IdempotencyKey::parse(b"order-42").is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; 255]).is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; 256]).is_err());
        assert!(IdempotencyKey::parse(b"").is_err());
        assert!(IdempotencyKey::parse("caf\u{e9}".as_bytes()).is_err());
        assert!(IdempotencyKey::parse(b"tab\there").is_err());
    }

    #[test]
    fn sandbox_is_chosen_by_header_or_query() {
        let mut h = HeaderMap::new();
        let plain: Uri = "/api/v1/agents/mary/call".parse().expect("uri");
        assert!(!wants_sandbox(&h, &plain, "x-grove-sandbox"));
        h.insert("x-grove-sandbox", "TRUE".parse().expect("value"));
        assert!(wants_sandbox(&h, &plain, "x-grove-sandbox"));
        let q: Uri = "/api/v1/agents/mary/call?a=b&sandbox=1"
            .parse()
            .expect("uri");
        assert!(wants_sandbox(&HeaderMap::new(), &q, "x-grove-sandbox"));
        let off: Uri = "/x?sandbox=0".parse().expect("uri");
        assert!(!wants_sandbox(&HeaderMap::new(), &off, "x-grove-sandbox"));
    }
}
