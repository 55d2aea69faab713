//! The admin listener (`ADMIN_ADDR`): what operators and their tools use, never the public port.
//!
//! - `/metrics` and `/metrics/queues` (Prometheus, KEDA) without a token: they are counts, with
//!   no payer, phone or request in them, and the scrapers in a cluster would otherwise each need
//!   a secret mounted; keeping them off the public port is what protects them.
//! - `/admin/v1/...`, the admin API, behind an operator's bearer token (`auth`).

mod auth;

pub use auth::Operator;

use crate::{error::ApiError, request_id, routes, state::AppState};
use axum::{Extension, Json, Router, middleware, response::IntoResponse, routing::get};
use serde_json::{Value, json};
use tower_http::catch_panic::CatchPanicLayer;

/// Everything the admin listener serves.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/admin/v1/whoami", get(whoami))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_bearer,
        ));
    routes::metrics()
        .merge(api)
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("admin handler panicked").into_response()
        }))
        .layer(middleware::from_fn(request_id::middleware))
}

/// `GET /admin/v1/whoami`: the operator the token names (the CLI's check of its settings).
async fn whoami(Extension(operator): Extension<Operator>) -> Json<Value> {
    Json(json!({"operator": operator.0}))
}
