//! The paid gate over HTTP: the payment comes from the `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT`
//! (v1) header, and a delivery goes back as a 200 with the settlement in `PAYMENT-RESPONSE` (or
//! `X-PAYMENT-RESPONSE`) and `Idempotent-Replay: true` on a replay. Refusals render through
//! `ApiError` (a 402 with its challenge in both encodings).

use super::{ended::Delivery, gate, product::Product};
use crate::{
    error::ApiError, extract::IdempotencyKey, state::AppState, x402::payload::PaymentPayload,
};
use axum::{
    http::{HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::x402::headers;

/// Buys `product` with the payment in the request's head, and renders the outcome.
///
/// Takes the head and drops it once the payment is read: hyper's header values and URI share
/// the buffer the request was read into, which a borrowed head would keep for the whole wait on
/// the work (8 KiB a call in flight, issue 31).
pub async fn serve(
    state: &AppState,
    head: Parts,
    key: Option<IdempotencyKey>,
    product: &dyn Product,
) -> Result<Response, ApiError> {
    let payment = PaymentPayload::from_headers(&head.headers);
    drop(head);
    match gate::purchase(state, payment, key, product).await {
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
