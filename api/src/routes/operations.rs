//! Liveness, readiness (database and queue; the providers' health gates shown beside them),
//! Prometheus metrics, and the queues' counts as JSON (what the worker autoscaler reads).
//!
//! Readiness says whether this api process can serve: its database and its queue answer. A
//! queue that no worker consumes is not the api's fault and not a reason to leave the load
//! balancer (the api would leave exactly when work arrives for workers scaled to zero): it is
//! reported in the body, as `grove_queue_consumers`, and alerted on (`deploy/kubernetes`). An
//! open provider gate does not make the api unready either: it refuses only what needs that
//! provider, before payment.

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
    let ok = db.is_ok() && queue.is_ok();
    let mut live = None;
    // With Redis, jobs run only if some `worker` takes them: said here, not a 503 (see above).
    if queue.is_ok()
        && let Ok(Some(consumers)) = state.queue.consumers().await
    {
        let idle: Vec<&str> = consumers
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(q, _)| *q)
            .collect();
        if !idle.is_empty() {
            tracing::debug!(queues = ?idle, "readiness: no live worker consumes these queues");
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
    (
        [(header::CONTENT_TYPE, grove_common::metrics::CONTENT_TYPE)],
        scrape(&state).await,
    )
}

/// Reads what `/metrics` shows at scrape time (queues, payments needing attention, gates) and
/// renders every series. A source that cannot be read leaves its series as last read.
async fn scrape(state: &AppState) -> String {
    let queue = QueueGauges {
        stats: state.queue.stats().await.ok().flatten(),
        consumers: state.queue.consumers().await.ok().flatten(),
        push_retries: state.push_retries.count(),
        admission: state.admission.gauges(),
        write_wait: state.write_wait(),
    };
    let payments = match grove_common::db::payments::unknown_counts(&state.db).await {
        Ok(counts) => Some(counts),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: payments needing attention unreadable");
            None
        }
    };
    state.metrics.render(
        &queue,
        state.sweeps.as_deref(),
        &state.gates.all(),
        payments,
    )
}

/// `GET /metrics/queues`: each queue's ready, scheduled and held jobs, its backlog (ready +
/// held) and its live consumers, as JSON for KEDA's metrics-api scaler (`valueLocation:
/// queues.coaching.backlog`). 503 while Redis cannot be read (KEDA then keeps the replicas it
/// has, or its fallback); `{"queues": null}` with the in-process queue.
pub(super) async fn queue_stats(State(state): State<AppState>) -> impl IntoResponse {
    let stats = match state.queue.stats().await {
        Ok(stats) => stats,
        Err(e) => {
            tracing::warn!(error = %e, "queue counts unavailable");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, READY_RETRY_AFTER_S)],
                Json(json!({"queues": null, "error": "queue unavailable"})),
            )
                .into_response();
        }
    };
    let consumers = state.queue.consumers().await.ok().flatten();
    let queues = stats.map(|all| {
        all.iter()
            .map(|s| {
                let live = consumers
                    .iter()
                    .flatten()
                    .find(|(q, _)| *q == s.queue)
                    .map(|(_, n)| *n);
                let body = json!({
                    "ready": s.ready,
                    "scheduled": s.scheduled,
                    "held": s.held,
                    "backlog": s.backlog(),
                    "consumers": live,
                });
                (s.queue.to_owned(), body)
            })
            .collect::<serde_json::Map<_, _>>()
    });
    Json(json!({ "queues": queues })).into_response()
}
