//! Every HTTP request counted by method, route template and status, and timed to its response
//! head. The route is the template the router matched (`/receipts/{id}`), never the raw path:
//! a path's values are the caller's, and a label per value would grow without end. A request no
//! route matched counts under `unmatched`.

use crate::metrics::Metrics;
use axum::{
    extract::{MatchedPath, Request, State},
    http::Method,
    middleware::Next,
    response::Response,
};
use std::time::Instant;

/// The route label of a request that matched no route (a 404 or 405 of the fallback).
pub const UNMATCHED: &str = "unmatched";

/// The public listener's outermost layer: the request's id and span (`crate::request_id`), and
/// inside them its count and time. One layer, not two: each `from_fn` layer is a boxed future
/// held by every request in flight (about 1.7 KiB of the 62 a call in `--bin heap`, issue 31).
pub async fn middleware(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    crate::request_id::traced(request, |request| measured(&metrics, request, next)).await
}

async fn measured(metrics: &Metrics, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    metrics.registry().http_request(
        method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The method, or `_OTHER` for one outside HTTP's registered set (the caller's word otherwise,
/// and a label per word would grow without end; OpenTelemetry's conventions do the same).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}
