//! The worker's health endpoint (`WORKER_HEALTH_ADDR`): `/healthz` (the process answers),
//! `/readyz` (every queue consumer is taking jobs; 503 with each consumer's state otherwise;
//! the providers' health gates as this process reads them, which never make it unready: an
//! open gate is what it probes) and `/metrics` (Prometheus: consumer up, restarts, jobs
//! running, gates open, and the model calls, SMS sends and process figures of this process).

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
    metrics::{CONTENT_TYPE, Metrics, catalog as m},
};
use serde_json::json;
use std::{net::SocketAddr, sync::Arc};
use tokio::net::TcpListener;

/// Binds `addr` and serves until `shutdown` resolves. Returns the bound address (port 0 picks
/// one).
pub async fn serve(
    addr: SocketAddr,
    watched: Watched,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let router = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .with_state(watched);
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
pub struct Watched {
    pub consumers: Arc<Consumers>,
    pub gates: Gates,
    /// The process's registry: the model and SMS series its jobs record, and the ones set here.
    pub metrics: Arc<Metrics>,
}

async fn ready(
    State(Watched {
        consumers, gates, ..
    }): State<Watched>,
) -> impl IntoResponse {
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

async fn metrics(State(w): State<Watched>) -> impl IntoResponse {
    let r = &w.metrics;
    for c in w.consumers.snapshot() {
        let consumer = [("consumer", c.name.as_str())];
        let up = if c.state == ConsumerState::Running {
            1.0
        } else {
            0.0
        };
        r.gauge(m::WORKER_CONSUMER_UP, &consumer, up);
        r.count_total(m::WORKER_CONSUMER_RESTARTS, &consumer, c.restarts);
    }
    r.gauge(m::WORKER_JOBS_RUNNING, &[], InFlight::count() as f64);
    for g in w.gates.all() {
        let open = if g.admits() { 0.0 } else { 1.0 };
        r.gauge(m::GATE_OPEN, &[("provider", g.provider.as_str())], open);
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], r.render())
}
