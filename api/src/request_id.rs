//! A request id for every request: taken from `x-request-id` when the caller sends a sane one,
//! generated otherwise, echoed in the response, put on the tracing span and into error bodies.
//! The request's span is the root of its trace, or a child of the caller's `traceparent`.

use axum::{
    extract::{MatchedPath, Request},
    http::HeaderValue,
    middleware::Next,
    response::Response,
};
use futures::FutureExt;
use grove_common::telemetry;
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

pub fn middleware(request: Request, next: Next) -> impl Future<Output = Response> {
    traced(request, |request| next.run(request))
}

/// The request's id and span around `inner` (the rest of the stack): the middleware above, and
/// the public listener's one layer for ids, traces and metrics (`crate::http_metrics`).
///
/// Not an `async fn`: one keeps its arguments' room for its whole life, beside the locals they
/// move into, and the request's head is 240 bytes. The id and the span are made here, before
/// the future; what waits holds only the inner future and what the response needs.
pub fn traced<F, Fut>(mut request: Request, inner: F) -> impl Future<Output = Response>
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let id = request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| acceptable(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let span = span_of(&request, &id);
    // A caller's W3C trace context: this request joins its trace (a malformed one is ignored).
    let parent = request
        .headers()
        .get(telemetry::TRACEPARENT)
        .and_then(|v| v.to_str().ok());
    telemetry::continue_trace(&span, parent);
    request.extensions_mut().insert(RequestId(id.clone()));
    // A map, not an `async` block: a future awaited inside one is held twice (captured, and
    // moved to be awaited).
    REQUEST_ID
        .scope(id.clone(), inner(request).instrument(span.clone()))
        .map(move |mut response| {
            let status = response.status().as_u16();
            span.record("http.response.status_code", status);
            if response.status().is_server_error() {
                span.record("otel.status_code", "ERROR");
            }
            span.in_scope(|| tracing::debug!(status, "response"));
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(HEADER, value);
            }
            response
        })
}

/// OpenTelemetry's HTTP server conventions: the route is the matched template, the span is
/// named after it, and a 5xx marks the span as failed (`traced`).
fn span_of(request: &Request, id: &str) -> tracing::Span {
    let method = request.method().as_str();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    tracing::info_span!(
        "http.request",
        otel.name = %route.map_or_else(|| method.to_owned(), |r| format!("{method} {r}")),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        request_id = %id,
        http.request.method = %method,
        http.route = route,
        url.path = %request.uri().path(),
        http.response.status_code = tracing::field::Empty,
    )
}
