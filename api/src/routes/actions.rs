//! `POST /api/v1/actions/review-request/call` (`table::Op::RequestReview`): the review request.
//! Validate and refuse what must not be sent (before any 402), then the sandbox's sample for
//! this body, or the paid flow.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid::{
        self,
        http::{Checked, Order},
    },
    products::ReviewPurchase,
    review,
    state::AppState,
};
use axum::{
    Json,
    extract::{Request, State},
    response::{IntoResponse, Response},
};

pub(super) fn call(
    State(state): State<AppState>,
    request: Request,
) -> impl Future<Output = Result<Response, ApiError>> {
    paid::http::route(state.clone(), check(state, request))
}

/// Refuses what must not be sent, then answers from the sandbox or orders the request.
async fn check(state: AppState, request: Request) -> Result<Checked<ReviewPurchase>, ApiError> {
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
        return Ok(Checked::Answered(Json(sample).into_response()));
    }
    let product = ReviewPurchase::new(body).map_err(ApiError::internal)?;
    Ok(Checked::Order(Order::new(parts, key, product)))
}
