//! Every route, registered from the one table of public operations (`table.rs`): each operation
//! gets its handler here, and nothing is routed that the table (hence the OpenAPI document) does
//! not list, with one exception: the MCP endpoint (`crate::mcp`), which speaks JSON-RPC and
//! describes its tools through MCP itself.

pub(crate) mod actions;
pub(crate) mod coaching;
mod free;
mod operations;
mod receipts;
pub(crate) mod reviews;
pub mod table;
mod webhooks;

use crate::{error::ApiError, state::AppState};
use axum::{
    Router,
    routing::{MethodRouter, get},
};
use grove_common::catalog::paths;
use table::{OPERATIONS, Op, Operation};

pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for op in OPERATIONS.iter() {
        router = router.route(&op.path(&state.config), endpoint(op));
    }
    router
        .route_service(crate::mcp::PATH, crate::mcp::service(state.clone()))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}

/// The metrics, for Prometheus and KEDA: served on the admin listener (`crate::admin`), never on
/// the public port, and not in the OpenAPI document.
pub(crate) fn metrics() -> Router<AppState> {
    Router::new()
        .route(paths::METRICS, get(operations::metrics))
        .route(paths::QUEUE_METRICS, get(operations::queue_stats))
}

/// The handler of each operation, on the operation's method.
fn endpoint(op: &Operation) -> MethodRouter<AppState> {
    match op.op {
        Op::ListAgents => op.on(free::agents_catalog),
        Op::ListActions => op.on(free::actions_catalog),
        Op::CallAgent => op.on(coaching::call),
        Op::RequestReview => op.on(actions::call),
        Op::GetModeRequestSchema => op.on(free::mode_request_schema),
        Op::GetModeResponseSchema => op.on(free::mode_response_schema),
        Op::GetReviewRequestRequestSchema => op.on(free::action_request_schema),
        Op::GetReviewRequestResponseSchema => op.on(free::action_response_schema),
        Op::GetOpenApi => op.on(free::openapi),
        Op::GetX402Discovery => op.on(free::well_known),
        Op::GetAgentsGuide => op.on(free::agents_guide),
        Op::GetActionsGuide => op.on(free::actions_guide),
        Op::GetSkill => op.on(free::skill),
        Op::GetReceipt => op.on(receipts::show),
        Op::GetReviewRequest => op.on(reviews::show),
        Op::CancelReviewRequest => op.on(reviews::cancel),
        Op::FollowReviewLink => op.on(reviews::click),
        Op::ReceiveSmsStatus => op.on(webhooks::status_callback),
        Op::ReceiveSmsInbound => op.on(webhooks::inbound),
        Op::GetHealth => op.on(operations::health),
        Op::GetReadiness => op.on(operations::ready),
    }
}
