//! The worker's health endpoint (`WORKER_HEALTH_ADDR`): `/healthz` (the process answers),
//! `/readyz` (every queue consumer is taking jobs; 503 with each consumer's state otherwise;
//! the providers' health gates as this process reads them, which never make it unready: an
//! open gate is what it probes) and `/metrics` (Prometheus: consumer up, restarts, jobs
//! running, gates open).

use crate::runtime::InFlight;
use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use grove_common::{
    consumers::{Consumers, State as ConsumerState},
    health::Gates,
};
use serde_json::json;
use std::{fmt::Write, net::SocketAddr, sync::Arc};
use tokio::net::TcpListener;

/// Binds `addr` and serves until `shutdown` resolves. Returns the bound address (port 0 picks
/// one).
pub async fn serve(
    addr: SocketAddr,
    consumers: Arc<Consumers>,
    gates: Gates,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let router = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .with_state(Watched { consumers, gates });
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

/// What the endpoint reports on.
#[derive(Clone)]
struct Watched {
    consumers: Arc<Consumers>,
    gates: Gates,
}

async fn ready(State(Watched { consumers, gates }): State<Watched>) -> impl IntoResponse {
    let ok = consumers.ready();
    let body = json!({
        "status": if ok { "ready" } else { "not_ready" },
        "consumers": consumers.snapshot(),
        "jobs_running": InFlight::count(),
        "gates": gates.all(),
    });
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body))
}

async fn metrics(State(Watched { consumers, gates }): State<Watched>) -> impl IntoResponse {
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
    out.push_str(
        "# HELP grove_provider_gate_open 1 while a provider's health gate is open (or half-open).\n",
    );
    out.push_str("# TYPE grove_provider_gate_open gauge\n");
    for g in gates.all() {
        let _ = writeln!(
            out,
            "grove_provider_gate_open{{provider=\"{}\"}} {}",
            g.provider,
            u8::from(!g.admits())
        );
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
