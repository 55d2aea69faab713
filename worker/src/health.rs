//! The worker's health endpoint (`WORKER_HEALTH_ADDR`): `/healthz` (the process answers),
//! `/readyz` (every queue consumer is taking jobs; 503 with each consumer's state otherwise)
//! and `/metrics` (Prometheus: consumer up, restarts, jobs running).

use crate::runtime::InFlight;
use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use grove_common::consumers::{Consumers, State as ConsumerState};
use serde_json::json;
use std::{fmt::Write, net::SocketAddr, sync::Arc};
use tokio::net::TcpListener;

/// Binds `addr` and serves until `shutdown` resolves. Returns the bound address (port 0 picks
/// one).
pub async fn serve(
    addr: SocketAddr,
    consumers: Arc<Consumers>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let router = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .with_state(consumers);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %e, "health endpoint stopped");
        }
    });
    tracing::info!(%bound, "health endpoint listening");
    Ok(bound)
}

async fn ready(State(consumers): State<Arc<Consumers>>) -> impl IntoResponse {
    let ok = consumers.ready();
    let body = json!({
        "status": if ok { "ready" } else { "not_ready" },
        "consumers": consumers.snapshot(),
        "jobs_running": InFlight::count(),
    });
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body))
}

async fn metrics(State(consumers): State<Arc<Consumers>>) -> impl IntoResponse {
    let mut out = String::new();
    let all = consumers.snapshot();
    out.push_str("# HELP grove_worker_consumer_up 1 while a queue consumer is taking jobs.\n");
    out.push_str("# TYPE grove_worker_consumer_up gauge\n");
    for c in &all {
        let up = u8::from(c.state == ConsumerState::Running);
        let _ = writeln!(
            out,
            "grove_worker_consumer_up{{consumer=\"{}\"}} {up}",
            c.name
        );
    }
    out.push_str(
        "# HELP grove_worker_consumer_restarts_total Consumers rebuilt after a queue error.\n",
    );
    out.push_str("# TYPE grove_worker_consumer_restarts_total counter\n");
    for c in &all {
        let _ = writeln!(
            out,
            "grove_worker_consumer_restarts_total{{consumer=\"{}\"}} {}",
            c.name, c.restarts
        );
    }
    out.push_str("# HELP grove_worker_jobs_running Jobs running in this process.\n");
    out.push_str("# TYPE grove_worker_jobs_running gauge\n");
    let _ = writeln!(out, "grove_worker_jobs_running {}", InFlight::count());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
