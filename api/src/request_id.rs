//! A request id for every request: taken from `x-request-id` when the caller sends a sane one,
//! generated otherwise, echoed in the response, put on the tracing span and into error bodies.

use axum::{extract::Request, http::HeaderValue, middleware::Next, response::Response};
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The request's id, also kept in the request's extensions: a handler that runs on another task
/// (the MCP service spawns one per message) re-enters [`scope`] with it.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// Runs `fut` as part of the request `id` (for [`current`] and error bodies).
pub async fn scope<F: std::future::Future>(id: String, fut: F) -> F::Output {
    REQUEST_ID.scope(id, fut).await
}

/// The id of the request being handled, or "" outside a request.
pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

fn acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

pub async fn middleware(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| acceptable(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let span = tracing::info_span!(
        "http.request",
        request_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request).instrument(span.clone()))
        .await;
    span.in_scope(|| tracing::debug!(status = response.status().as_u16(), "response"));
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
