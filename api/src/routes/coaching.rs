//! `POST /api/v1/agents/{agent_id}/call` (`table::Op::CallAgent`): validate, then sandbox, or
//! the payment gate.

use crate::{
    error::ApiError,
    extract::{self, IdempotencyKey},
    paid::{
        self,
        http::{Checked, Order},
    },
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

pub(super) fn call(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    request: Request,
) -> impl Future<Output = Result<Response, ApiError>> {
    paid::http::route(state.clone(), check(state, agent_id, request))
}

/// Validates, then answers from the sandbox or orders the call.
async fn check(
    state: AppState,
    agent_id: String,
    request: Request,
) -> Result<Checked<CoachingCall>, ApiError> {
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
        let sample = ([(header::CONTENT_TYPE, "application/json")], sample).into_response();
        return Ok(Checked::Answered(sample));
    }
    CoachingCall::on_sale(&state)?;
    // The product holds the request as the call stores it; the typed copy is not kept.
    let product = CoachingCall::new(coach, mode, &request).map_err(ApiError::internal)?;
    Ok(Checked::Order(Order::new(parts, key, product)))
}

#[cfg(test)]
mod tests {
    use crate::future_size::{of3 as size3, of4 as size4};

    /// A paid call waiting on its work holds this handler's future (boxed by axum): the order
    /// and the purchase. The checks before it have a box of their own; as one `async fn` it
    /// held the request's head twice, the typed request and the head it had read the payment
    /// from through the whole wait (4,312 bytes; issue 31).
    #[test]
    fn a_coaching_call_waiting_on_its_work_holds_only_its_order_and_purchase() {
        let handler = size3(super::call);
        let purchase = size4(crate::paid::gate::purchase);
        println!("call {handler} B, purchase {purchase} B");
        assert!(
            handler <= purchase + 512,
            "the handler's future is {handler} bytes, the purchase's {purchase}"
        );
    }
}
