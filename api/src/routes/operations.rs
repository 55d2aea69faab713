//! Liveness, readiness (database and queue) and Prometheus metrics.

use crate::state::AppState;
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
};
use serde_json::json;

pub(super) async fn health() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

pub(super) async fn ready(State(state): State<AppState>) -> impl IntoResponse {
    let db = state.db.ping().await.map_err(|e| e.to_string());
    let queue = state.queue.ping().await.map_err(|e| e.to_string());
    let ok = db.is_ok() && queue.is_ok();
    let check = |r: &Result<(), String>| match r {
        Ok(()) => json!("ok"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            json!("unavailable")
        }
    };
    let body = json!({"status": if ok { "ready" } else { "not_ready" }, "checks": {"database": check(&db), "queue": check(&queue)}});
    if ok {
        (StatusCode::OK, Json(body)).into_response()
    } else {
        // A load balancer or agent may come back soon: the checks are cheap.
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, READY_RETRY_AFTER_S)],
            Json(body),
        )
            .into_response()
    }
}

/// Seconds a client should wait before asking `/readyz` again after a 503.
const READY_RETRY_AFTER_S: &str = "5";

pub(super) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let depth = state.queue.depth().await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(depth, state.sweeps.as_deref()),
    )
}
