//! The rate limits (`crate::limits`) applied to requests: the address limit on free and unpaid
//! HTTP requests and MCP tool calls, and the refused-payment budget on requests carrying a
//! payment.

use crate::{error::ApiError, limits::PaymentRefused, state::AppState};
use axum::{
    extract::{ConnectInfo, Request, State},
    http::HeaderMap,
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures::{
    FutureExt,
    future::{self, Either},
};
use std::net::{IpAddr, SocketAddr};

/// The connection's peer, which `axum::serve` leaves in every request's extensions.
pub fn peer_ip(extensions: &axum::http::Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

fn carries_payment(headers: &HeaderMap) -> bool {
    headers.contains_key("payment-signature") || headers.contains_key("x-payment")
}

/// The HTTP layer: the address limit on free and unpaid requests, and the refused-payment
/// budget on requests that carry a payment.
///
/// Not an `async fn`: one holds its arguments' room (the request's head, 240 bytes) for its
/// whole life beside the rest of the stack's future. The limits are checked here, and what waits
/// holds the rest of the stack and, for a paying address, that address.
pub fn middleware(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> impl Future<Output = Response> {
    match admit(&state, &request) {
        Err(retry_after_s) => Either::Left(future::ready(
            ApiError::RateLimited { retry_after_s }.into_response(),
        )),
        Ok(paying) => Either::Right(next.run(request).map(move |response| {
            if let Some(ip) = paying
                && response.extensions().get::<PaymentRefused>().is_some()
            {
                state.limits.payment_refused(ip);
            }
            response
        })),
    }
}

/// Whether a request goes on (with the address to charge if it carries a payment that is
/// refused) or is refused here (the seconds to wait).
fn admit(state: &AppState, request: &Request) -> Result<Option<IpAddr>, u64> {
    if !crate::limits::applies_to(request.uri().path()) {
        return Ok(None);
    }
    let limits = &state.limits;
    let peer = peer_ip(request.extensions());
    let Some(ip) = limits.client_ip(request.headers(), peer) else {
        // Loopback, or no address at all: nothing to count it against.
        return Ok(None);
    };
    if !carries_payment(request.headers()) {
        if let Err(wait) = limits.check_ip(ip) {
            state.metrics.rate_limited("ip");
            return Err(wait);
        }
        return Ok(None);
    }
    if let Some(wait) = limits.blocked_for(ip) {
        state.metrics.rate_limited("bad_payments");
        return Err(wait);
    }
    Ok(Some(ip))
}

/// An unpaid MCP tool call, or another MCP request, from `ip`: the address limit applies as it
/// does to HTTP (a tool call carrying a payment is never limited here).
pub fn check_mcp(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
) -> Result<(), ApiError> {
    let Some(ip) = state.limits.client_ip(headers, peer) else {
        return Ok(());
    };
    state.limits.check_ip(ip).map_err(|wait| {
        state.metrics.rate_limited("ip");
        ApiError::RateLimited {
            retry_after_s: wait,
        }
    })
}
