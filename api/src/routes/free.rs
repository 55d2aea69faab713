//! The free surfaces: catalogs, schemas, OpenAPI, discovery, guides, skill file, health.

use crate::{error::ApiError, state::AppState};
use axum::{
    Router,
    body::Bytes,
    extract::{Path, State},
    http::header,
    response::{Html, IntoResponse, Response},
    routing::get,
};
use grove_common::catalog::{self, ModeId};

fn json_bytes(bytes: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/agents", get(|State(s): State<AppState>| async move { json_bytes(s.published.agents_catalog.clone()) }))
        .route("/api/v1/actions", get(|State(s): State<AppState>| async move { json_bytes(s.published.actions_catalog.clone()) }))
        .route("/api/v1/openapi.json", get(|State(s): State<AppState>| async move { json_bytes(s.published.openapi.clone()) }))
        .route("/.well-known/x402", get(|State(s): State<AppState>| async move { json_bytes(s.published.well_known.clone()) }))
        .route("/api/v1/schemas/{mode}/{file}", get(mode_schema))
        .route("/api/v1/schemas/actions/{action}/{file}", get(action_schema))
        .route("/docs/agents", get(|State(s): State<AppState>| async move { Html(s.published.agents_guide.clone()) }))
        .route("/docs/actions", get(|State(s): State<AppState>| async move { Html(s.published.actions_guide.clone()) }))
        .route(
            &state.config.skill_path(),
            get(|State(s): State<AppState>| async move {
                ([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], s.published.skill.clone())
            }),
        )
}

fn schema_file(raw: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], raw).into_response()
}

async fn mode_schema(
    State(s): State<AppState>,
    Path((mode, file)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let mode = ModeId::parse(&mode).map_err(|_| ApiError::UnknownMode(mode))?;
    let pair = s.schemas.mode(mode);
    match file.as_str() {
        "request.json" => Ok(schema_file(pair.request.raw())),
        "response.json" => Ok(schema_file(pair.response.raw())),
        _ => Err(ApiError::NotFound),
    }
}

async fn action_schema(
    State(s): State<AppState>,
    Path((action, file)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if action != catalog::REVIEW_REQUEST.id {
        return Err(ApiError::NotFound);
    }
    let pair = s.schemas.action();
    match file.as_str() {
        "request.json" => Ok(schema_file(pair.request.raw())),
        "response.json" => Ok(schema_file(pair.response.raw())),
        _ => Err(ApiError::NotFound),
    }
}
