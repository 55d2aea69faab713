//! `POST /api/v1/agents/{agent_id}/call` (`table::Op::CallAgent`): validate, then sandbox, or
//! the payment gate.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid::{self, Purchase, idempotency::Kind},
    state::AppState,
    validate,
    x402::challenge::Offer,
};
use axum::{
    extract::{Path, Request, State},
    http::header,
    response::{IntoResponse, Response},
};
use grove_common::catalog::{self, Coach, CoachId, Mode};
use serde_json::json;

pub(super) async fn call(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    let coach = CoachId::parse(&agent_id)
        .map(catalog::coach)
        .map_err(|_| ApiError::UnknownAgent(agent_id))?;
    let (parts, body) = request.into_parts();
    let key = IdempotencyKey::from_headers(&parts.headers)?;
    let body = extract::json_body(&parts.headers, body).await?;
    let mode = validate::coaching_request(&state.schemas, coach, &body)?;

    if extract::wants_sandbox(&parts.headers, &parts.uri, &state.sandbox_header) {
        let sample = state
            .published
            .coaching_sample(coach, mode)
            .ok_or_else(|| {
                ApiError::Internal(format!("no sandbox sample for {}/{}", coach.id, mode.id))
            })?;
        return Ok(([(header::CONTENT_TYPE, "application/json")], sample).into_response());
    }
    let offer = offer(&state, coach, mode)?;
    let purchase = Purchase {
        kind: Kind::Coaching,
        agent: Some(coach.id.as_str()),
        mode: Some(mode.id.as_str()),
        body: &body,
        offer,
        phone: None,
    };
    paid::serve(&state, &parts.headers, key, purchase).await
}

/// What a paid call to `coach` in `mode` sells, once it is on sale (a pay-to address and a model
/// provider configured). The HTTP route and the MCP tool (`mcp::call`) sell the same thing.
pub(crate) fn offer<'a>(
    state: &'a AppState,
    coach: &Coach,
    mode: &Mode,
) -> Result<Offer<'a>, ApiError> {
    if state.config.pay_to.is_none() {
        return Err(ApiError::PaymentsDisabled);
    }
    if state.config.llm.is_none() {
        return Err(ApiError::Unavailable(
            "no model provider is configured, so paid coaching calls are not on sale; the sandbox works",
        ));
    }
    let schemas = state.schemas.mode(mode.id);
    Ok(Offer {
        path: coach.call_path(),
        description: description(coach, mode),
        price: mode.price(),
        request_schema: schemas.request.json(),
        request_schema_path: mode.request_schema_path(),
        response_schema_path: mode.response_schema_path(),
        example_body: json!({"mode": mode.id, "messages": [{"role": "user", "content": "Where should we focus next?"}]}),
    })
}

fn description(coach: &Coach, mode: &Mode) -> String {
    format!(
        "{} ({}): {} ({} tier, {})",
        coach.name,
        coach.domain,
        mode.id,
        mode.tier.as_str(),
        mode.price()
    )
}
