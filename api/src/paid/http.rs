//! The paid gate over HTTP: the payment comes from the `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT`
//! (v1) header, and a delivery goes back as a 200 with the settlement in `PAYMENT-RESPONSE` (or
//! `X-PAYMENT-RESPONSE`) and `Idempotent-Replay: true` on a replay. Refusals render through
//! `ApiError` (a 402 with its challenge in both encodings).

use super::{ended::Delivery, gate, product::Product};
use crate::{
    error::ApiError,
    extract::IdempotencyKey,
    state::AppState,
    x402::{payload::PaymentPayload, rejection::PaymentRejection},
};
use axum::{
    http::{HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use futures::FutureExt;
use grove_common::x402::headers;

/// What a paid route's checks end in: the sandbox's (or another) answer given at once, or an
/// order for the gate.
pub enum Checked<P> {
    Answered(Response),
    Order(Order<P>),
}

/// A request that passed its route's checks: the payment read from its head, its idempotency
/// key, and what it buys.
pub struct Order<P> {
    payment: Result<Option<PaymentPayload>, PaymentRejection>,
    key: Option<IdempotencyKey>,
    product: P,
}

impl<P> Order<P> {
    /// Takes the head and drops it once the payment is read: hyper's header values and URI
    /// share the buffer the request was read into, which a kept head would hold for the whole
    /// wait on the work (8 KiB a call in flight, issue 31).
    pub fn new(head: Parts, key: Option<IdempotencyKey>, product: P) -> Self {
        let payment = PaymentPayload::from_headers(&head.headers);
        drop(head);
        Self {
            payment,
            key,
            product,
        }
    }
}

/// A paid route: its checks (`checked`: the body read and validated, the sandbox answered),
/// then the gate for an order.
///
/// The checks run in a box of their own, freed before the wait on the work; and this is not an
/// `async fn`, which would hold its arguments' room (the request's head) for its whole life
/// beside the locals they move to. A waiting call holds the order and the purchase (issue 31).
pub fn route<P: Product + 'static>(
    state: AppState,
    checked: impl Future<Output = Result<Checked<P>, ApiError>> + Send + 'static,
) -> impl Future<Output = Result<Response, ApiError>> + Send {
    let checked = Box::pin(checked);
    async move {
        let order = match checked.await? {
            Checked::Answered(response) => return Ok(response),
            Checked::Order(order) => order,
        };
        serve(&state, order.payment, order.key, &order.product).await
    }
}

/// Buys `product` with `payment`, and renders the outcome.
pub fn serve<'a>(
    state: &'a AppState,
    payment: Result<Option<PaymentPayload>, PaymentRejection>,
    key: Option<IdempotencyKey>,
    product: &'a dyn Product,
) -> impl Future<Output = Result<Response, ApiError>> + Send + 'a {
    gate::purchase(state, payment, key, product).map(rendered)
}

fn rendered(purchased: Result<Delivery, ApiError>) -> Result<Response, ApiError> {
    match purchased {
        Ok(delivery) => Ok(render(delivery)),
        // The address that sent a payment header we refused is charged for it
        // (`limits::middleware`): forged payments skip the address limit otherwise.
        Err(ApiError::PaymentRequired(challenge))
            if challenge.error.starts_with("payment_invalid") =>
        {
            let mut response = ApiError::PaymentRequired(challenge).into_response();
            response
                .extensions_mut()
                .insert(crate::limits::PaymentRefused);
            Ok(response)
        }
        Err(e) => Err(e),
    }
}

fn render(delivery: Delivery) -> Response {
    let mut response = (StatusCode::OK, axum::Json(delivery.body)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let name = if delivery.x402_version == 1 {
        headers::X_PAYMENT_RESPONSE
    } else {
        headers::PAYMENT_RESPONSE
    };
    if let Ok(json) = serde_json::to_string(&delivery.settlement)
        && let Ok(v) = HeaderValue::from_str(&STANDARD.encode(json))
    {
        h.insert(name, v);
    }
    if delivery.replay {
        h.insert("idempotent-replay", HeaderValue::from_static("true"));
    }
    response
}
