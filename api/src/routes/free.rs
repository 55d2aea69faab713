//! The free surfaces: catalogs, schemas, OpenAPI, discovery, guides, skill file.

use crate::{error::ApiError, state::AppState};
use axum::{
    body::Bytes,
    extract::{Path, State},
    http::header,
    response::{Html, IntoResponse, Response},
};
use grove_common::{catalog::ModeId, schema::SchemaPair};

fn json_bytes(bytes: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

pub(super) async fn agents_catalog(State(s): State<AppState>) -> Response {
    json_bytes(s.published.agents_catalog.clone())
}

pub(super) async fn actions_catalog(State(s): State<AppState>) -> Response {
    json_bytes(s.published.actions_catalog.clone())
}

pub(super) async fn openapi(State(s): State<AppState>) -> Response {
    json_bytes(s.published.openapi.clone())
}

pub(super) async fn well_known(State(s): State<AppState>) -> Response {
    json_bytes(s.published.well_known.clone())
}

pub(super) async fn agents_guide(State(s): State<AppState>) -> Html<String> {
    Html(s.published.agents_guide.clone())
}

pub(super) async fn actions_guide(State(s): State<AppState>) -> Html<String> {
    Html(s.published.actions_guide.clone())
}

pub(super) async fn skill(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        s.published.skill.clone(),
    )
        .into_response()
}

fn schema_file(raw: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], raw).into_response()
}

fn mode_pair(s: &AppState, mode: String) -> Result<&SchemaPair, ApiError> {
    let mode = ModeId::parse(&mode).map_err(|_| ApiError::UnknownMode(mode))?;
    Ok(s.schemas.mode(mode))
}

pub(super) async fn mode_request_schema(
    State(s): State<AppState>,
    Path(mode): Path<String>,
) -> Result<Response, ApiError> {
    Ok(schema_file(mode_pair(&s, mode)?.request.raw()))
}

pub(super) async fn mode_response_schema(
    State(s): State<AppState>,
    Path(mode): Path<String>,
) -> Result<Response, ApiError> {
    Ok(schema_file(mode_pair(&s, mode)?.response.raw()))
}

pub(super) async fn action_request_schema(State(s): State<AppState>) -> Response {
    schema_file(s.schemas.action().request.raw())
}

pub(super) async fn action_response_schema(State(s): State<AppState>) -> Response {
    schema_file(s.schemas.action().response.raw())
}
