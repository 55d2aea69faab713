//! Looking things up as an operator: a call (with its payment, result and review request), a
//! receipt (even expired), a review request with its messages and events (the full number
//! shown: an operator may need to act on it).

use super::payments;
use crate::{error::ApiError, routes, state::AppState};
use axum::{
    Json,
    extract::{Path, State},
};
use chrono::SecondsFormat;
use grove_common::db::{
    calls,
    entities::{call, payment, receipt},
    reviews,
};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use uuid::Uuid;

/// `GET /admin/v1/calls/{id}`.
pub(super) async fn call(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    let c = calls::load(&state.db, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(call_view(&state, &c).await?))
}

/// `GET /admin/v1/receipts/{id}`: the receipt and its call.
pub(super) async fn receipt(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let rec = receipt::Entity::find_by_id(id)
        .one(&state.db)
        .await?
        .ok_or(ApiError::NotFound)?;
    let c = calls::load(&state.db, rec.call_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let mut view = call_view(&state, &c).await?;
    view["receipt"] = json!({
        "id": rec.id,
        "kind": rec.kind,
        "created_at": rec.created_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "expires_at": rec.expires_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "expired": rec.expires_at < state.clock.wall(),
    });
    Ok(Json(view))
}

/// `GET /admin/v1/review-requests/{id}`: as its caller sees it, plus the full number, the payer
/// and the call.
pub(super) async fn review_request(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let req = reviews::load(&state.db, &id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let mut view = routes::reviews::view(&state, &req).await?;
    view["recipient"]["phone_e164"] = json!(req.phone);
    view["payer"] = json!(req.payer);
    view["call_id"] = json!(req.call_id);
    view["suppressed"] = json!(reviews::is_suppressed(&state.db, &req.phone).await?);
    Ok(Json(view))
}

async fn call_view(state: &AppState, c: &call::Model) -> Result<Value, ApiError> {
    let p = payment::Entity::find()
        .filter(payment::Column::CallId.eq(c.id))
        .one(&state.db)
        .await?;
    let result = calls::load_result(&state.db, c.id).await?.map(|r| r.body);
    let review = reviews::by_call(&state.db, c.id).await?.map(|r| r.id);
    let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(SecondsFormat::Secs, true);
    Ok(json!({
        "id": c.id,
        "kind": c.kind,
        "agent": c.agent,
        "mode": c.mode,
        "payer": c.payer,
        "status": c.status,
        "error": c.error,
        "attempts": c.attempts,
        "runs": c.runs,
        "receipt_id": c.receipt_id,
        "request_id": c.request_id,
        "review_request_id": review,
        "created_at": at(c.created_at),
        "updated_at": at(c.updated_at),
        "completed_at": c.completed_at.map(at),
        "request": c.request,
        "payment": p.as_ref().map(|p| payments::view(p, Some(c))),
        "result": result,
    }))
}
