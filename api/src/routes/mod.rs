//! Every route, merged in one place; each module exposes its own `router()`.

mod actions;
mod coaching;
mod free;
mod operations;
mod receipts;
mod reviews;
mod webhooks;

use crate::{error::ApiError, state::AppState};
use axum::Router;

pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(free::router(&state))
        .merge(coaching::router())
        .merge(actions::router())
        .merge(receipts::router())
        .merge(reviews::router())
        .merge(webhooks::router())
        .merge(operations::router())
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}
