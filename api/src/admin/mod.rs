//! The admin listener (`ADMIN_ADDR`): what operators and their tools use, never the public port.
//!
//! - `/metrics` and `/metrics/queues` (Prometheus, KEDA) without a token: they are counts, with
//!   no payer, phone or request in them, and the scrapers in a cluster would otherwise each need
//!   a secret mounted; keeping them off the public port is what protects them.
//! - `/admin/v1/...`, the admin API (JSON), behind an operator's bearer token (`auth`): payments
//!   needing attention and their resolution, lookups, opt-outs, the report, the audit.
//!   docs/operations.md lists the routes; `grove-admin` calls them.

mod audit;
mod auth;
mod console;
mod lookup;
mod opt_outs;
mod payments;
mod report;

pub use auth::Operator;

use crate::{error::ApiError, extract, request_id, routes, state::AppState};
use axum::{
    Extension, Json, Router,
    body::Body,
    extract::{Path, State},
    http::HeaderMap,
    middleware,
    response::IntoResponse,
    routing::{get, post},
};
use grove_common::schema::Violation;
use serde_json::{Value, json};
use std::collections::HashMap;
use tower_http::catch_panic::CatchPanicLayer;

/// Everything the admin listener serves.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/admin/v1/whoami", get(whoami))
        .route("/admin/v1/payments", get(list_payments))
        .route("/admin/v1/payments/{id}/resolve", post(resolve_payment))
        .route("/admin/v1/calls/{id}", get(lookup::call))
        .route("/admin/v1/receipts/{id}", get(lookup::receipt))
        .route(
            "/admin/v1/review-requests/{id}",
            get(lookup::review_request),
        )
        .route(
            "/admin/v1/opt-outs",
            get(opt_outs::list).post(opt_outs::post_add),
        )
        .route("/admin/v1/opt-outs/remove", post(opt_outs::post_remove))
        .route("/admin/v1/report", get(report::get))
        .route("/admin/v1/audit", get(audit::list))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_bearer,
        ));
    routes::metrics()
        .merge(api)
        .merge(console::router())
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("admin handler panicked").into_response()
        }))
        .layer(middleware::from_fn(request_id::middleware))
}

/// `?limit=N`: `default` when absent, else 1 to `max`.
fn limit(query: &HashMap<String, String>, default: u64, max: u64) -> Result<u64, ApiError> {
    match query.get("limit").map(|l| l.parse::<u64>()) {
        None => Ok(default),
        Some(Ok(n)) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::Validation(vec![Violation::new(
            "/query/limit",
            format!("must be a whole number from 1 to {max}"),
        )])),
    }
}

/// `GET /admin/v1/whoami`: the operator the token names (the CLI's check of its settings).
async fn whoami(Extension(operator): Extension<Operator>) -> Json<Value> {
    Json(json!({"operator": operator.0}))
}

/// `GET /admin/v1/payments`: the payments needing attention, oldest first.
async fn list_payments(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let listed = payments::needing_attention(&state).await?;
    let rows: Vec<Value> = listed
        .iter()
        .map(|(p, c)| payments::view(p, c.as_ref()))
        .collect();
    Ok(Json(json!({"payments": rows})))
}

/// `POST /admin/v1/payments/{id}/resolve` `{"outcome": "settled"|"unsettled", "transaction",
/// "reason"}`.
async fn resolve_payment(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let body = extract::json_body(&headers, body).await?;
    let order = payments::Order::parse(
        body["outcome"].as_str(),
        body["transaction"].as_str(),
        body["reason"].as_str(),
    )?;
    Ok(Json(
        payments::resolve(&state, &operator, &id, order).await?,
    ))
}
