//! Liveness, readiness (database and queue; the providers' health gates shown beside them) and
//! Prometheus metrics.

use crate::{metrics::QueueGauges, state::AppState};
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
    let check = |r: &Result<(), String>| match r {
        Ok(()) => json!("ok"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            json!("unavailable")
        }
    };
    let mut checks = json!({"database": check(&db), "queue": check(&queue)});
    let mut ok = db.is_ok() && queue.is_ok();
    let mut live = None;
    // With Redis, jobs run only if some `worker` takes them: a queue nobody consumes is down.
    if queue.is_ok()
        && let Ok(Some(consumers)) = state.queue.consumers().await
    {
        let idle: Vec<&str> = consumers
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(q, _)| *q)
            .collect();
        if !idle.is_empty() {
            tracing::warn!(queues = ?idle, "readiness: no live worker consumes these queues");
            ok = false;
        }
        checks["consumers"] = json!(if idle.is_empty() { "ok" } else { "none_alive" });
        live = Some(consumers);
    }
    // The providers' health gates are shown, never counted against readiness: while one is
    // open, free endpoints and the sandbox still serve, and its product answers 503 itself.
    let mut body = json!({
        "status": if ok { "ready" } else { "not_ready" },
        "checks": checks,
        "gates": state.gates.all(),
    });
    if let Some(live) = live {
        body["consumers"] = live
            .iter()
            .map(|(q, n)| (q.to_string(), json!(n)))
            .collect();
    }
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
    let queue = QueueGauges {
        depth: state.queue.depth().await,
        consumers: state.queue.consumers().await.ok().flatten(),
        push_retries: state.push_retries.count(),
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state
            .metrics
            .render(&queue, state.sweeps.as_deref(), &state.gates.all()),
    )
}
