//! `POST /api/v1/agents/{agent_id}/call` (`table::Op::CallAgent`): validate, then sandbox, or
//! the payment gate.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid,
    products::CoachingCall,
    state::AppState,
    validate,
};
use axum::{
    extract::{Path, Request, State},
    http::header,
    response::{IntoResponse, Response},
};
use grove_common::catalog::{self, CoachId};

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
    let (mode, request) = validate::coaching_request(&state.schemas, coach, body)?;

    if extract::wants_sandbox(&parts.headers, &parts.uri, &state.sandbox_header) {
        let sample = state
            .published
            .coaching_sample(coach, mode)
            .ok_or_else(|| {
                ApiError::internal(format!("no sandbox sample for {}/{}", coach.id, mode.id))
            })?;
        return Ok(([(header::CONTENT_TYPE, "application/json")], sample).into_response());
    }
    CoachingCall::on_sale(&state)?;
    let product = CoachingCall::new(coach, mode, &request).map_err(ApiError::internal)?;
    // The product holds the request as the call stores it; the typed copy would otherwise be
    // held through the whole wait on the work (issue 31).
    drop(request);
    paid::http::serve(&state, parts, key, &product).await
}
