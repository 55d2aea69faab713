//! `POST /api/v1/actions/review-request/call` (`table::Op::RequestReview`): the review request.
//! Validate and refuse what must not be sent (before any 402), then the sandbox's sample for
//! this body, or the paid flow.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid,
    products::ReviewPurchase,
    review,
    state::AppState,
};
use axum::{
    Json,
    extract::{Request, State},
    response::{IntoResponse, Response},
};

pub(super) async fn call(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = IdempotencyKey::from_headers(&parts.headers)?;
    let body = extract::json_body(&parts.headers, body).await?;
    // The sandbox refuses exactly what the paid call refuses: the same checks, in the same order.
    let now = state.clock.now();
    let body = review::pre_payment_checks(
        &state.schemas,
        &state.db,
        body,
        now,
        &state.config.public_base_url,
    )
    .await?;
    if extract::wants_sandbox(&parts.headers, &parts.uri, &state.sandbox_header) {
        let sample = review::sandbox::sample(&body, now, &state.config.public_base_url)
            .map_err(ApiError::Validation)?;
        return Ok(Json(sample).into_response());
    }
    let product = ReviewPurchase::new(body).map_err(ApiError::internal)?;
    paid::http::serve(&state, parts, key, &product).await
}
