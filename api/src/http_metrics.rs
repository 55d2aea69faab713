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
use futures::FutureExt;
use std::time::Instant;

/// The route label of a request that matched no route (a 404 or 405 of the fallback).
pub const UNMATCHED: &str = "unmatched";

/// The public listener's outermost layer: the request's id and span (`crate::request_id`), and
/// inside them its count and time. One layer, not two: each `from_fn` layer is a boxed future
/// held by every request in flight (about 1.7 KiB of the 62 a call in `--bin heap`, issue 31).
pub fn middleware(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> impl Future<Output = Response> {
    crate::request_id::traced(request, |request| measured(metrics, request, next))
}

/// Not an `async fn`, as `request_id::traced`: the request is read and handed on here, and the
/// future holds only the rest of the stack's and what the count needs.
fn measured(metrics: Metrics, request: Request, next: Next) -> impl Future<Output = Response> {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method());
    next.run(request).map(move |response| {
        metrics.registry().http_request(
            method,
            &route,
            response.status().as_u16(),
            started.elapsed(),
        );
        response
    })
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

#[cfg(test)]
mod tests {
    use crate::future_size::of3 as size3;

    /// Every request in flight holds the public listener's two layers' futures (boxed by axum).
    /// As `async fn`s they held the request's head (240 bytes) in every level that took it and
    /// in every local it moved to, and an awaited future twice: 1,848 and 840 bytes (issue 31).
    #[test]
    fn the_layers_around_a_waiting_request_hold_small_futures() {
        let metrics = size3(super::middleware);
        let limits = size3(crate::rate_limit::middleware);
        println!("http_metrics {metrics} B, rate_limit {limits} B");
        assert!(
            metrics <= 640,
            "the ids, traces and metrics layer's future is {metrics} bytes"
        );
        assert!(limits <= 384, "the rate limits' future is {limits} bytes");
    }
}
