//! `POST /api/v1/actions/review-request/call` (`table::Op::RequestReview`): the review request. Validate and refuse what must not be
//! sent (before any 402), then the sandbox's sample for this body, or the paid flow.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid::{self, Purchase, idempotency::Kind},
    review,
    state::AppState,
    x402::challenge::Offer,
};
use axum::{
    Json,
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use grove_common::catalog::REVIEW_REQUEST;
use serde_json::json;

pub(super) async fn call(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = IdempotencyKey::from_headers(&parts.headers)?;
    let body = extract::json_body(&parts.headers, body).await?;
    // The sandbox refuses exactly what the paid call refuses: the same checks, in the same order.
    let now = state.clock.now();
    let phone = review::pre_payment_checks(
        &state.schemas,
        &state.db,
        &body,
        now,
        &state.config.public_base_url,
    )
    .await?;
    if extract::wants_sandbox(&parts.headers, &parts.uri, &state.sandbox_header) {
        let sample = review::sandbox::sample(&body, &phone, now, &state.config.public_base_url)
            .map_err(ApiError::Validation)?;
        return Ok(Json(sample).into_response());
    }
    let cooldown_days = body
        .get("min_days_since_last_request")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(0);
    let offer = offer(&state);
    let purchase = Purchase {
        kind: Kind::ReviewRequest,
        agent: None,
        mode: None,
        body: &body,
        offer,
        phone: Some((phone.e164().to_owned(), cooldown_days)),
    };
    paid::serve(&state, &parts.headers, key, purchase).await
}

/// What a paid review request sells. The HTTP route and the MCP tool (`mcp::call`) sell the same
/// thing.
pub(crate) fn offer(state: &AppState) -> Offer<'_> {
    Offer {
        path: REVIEW_REQUEST.call_path(),
        description: format!("{} ({})", REVIEW_REQUEST.name, REVIEW_REQUEST.price),
        price: REVIEW_REQUEST.price,
        request_schema: state.schemas.action().request.json(),
        request_schema_path: REVIEW_REQUEST.request_schema_path(),
        response_schema_path: REVIEW_REQUEST.response_schema_path(),
        example_body: json!({
            "business": {"name": "Harbor Physio", "review_url": "https://example.com/review", "timezone": "America/New_York"},
            "customer": {"phone": "+13055550142", "first_name": "Dana"},
            "consent": {"method": "web_form_checkbox", "captured_at": "2026-10-02T15:04:05-04:00", "source": "intake form"},
        }),
    }
}
