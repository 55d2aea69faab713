//! A tracked review request: its status (masked phone, messages, event log, next action), its
//! cancellation, and the tracked review link (`GET /r/{token}`).

use crate::{error::ApiError, state::AppState};
use axum::{
    Json,
    extract::{Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use grove_common::{
    db::{
        entities::{link_click, review_request},
        reviews::{self, rfc3339, status},
    },
    review::phone::UsPhone,
};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::{Value, json};
use uuid::Uuid;

fn internal(e: sea_orm::DbErr) -> ApiError {
    ApiError::Internal(e.to_string())
}

async fn find(state: &AppState, id: &str) -> Result<review_request::Model, ApiError> {
    if !id.starts_with("rr_") || id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    reviews::load(&state.db, id)
        .await
        .map_err(internal)?
        .ok_or(ApiError::NotFound)
}

async fn view(state: &AppState, req: &review_request::Model) -> Result<Value, ApiError> {
    let messages = reviews::messages(&state.db, &req.id)
        .await
        .map_err(internal)?;
    let events = reviews::events(&state.db, &req.id)
        .await
        .map_err(internal)?;
    let masked = UsPhone::parse(&req.phone)
        .map(|p| p.masked())
        .unwrap_or_else(|_| "***".into());
    let next_action = match req.status.as_str() {
        status::SCHEDULED | status::DEFERRED => {
            json!({"action": "send", "at": rfc3339(req.send_at)})
        }
        status::FOLLOW_UP_SCHEDULED => {
            json!({"action": "follow_up", "at": req.follow_up_due_at.map(rfc3339)})
        }
        status::SENT => json!({"action": "await_delivery", "at": null}),
        _ => Value::Null,
    };
    Ok(json!({
        "id": req.id,
        "status": req.status,
        "recipient": {"phone": masked, "first_name": req.first_name, "time_zone": req.zone, "state": req.recipient_state},
        "business": {"name": req.business_name},
        "created_at": rfc3339(req.created_at),
        "scheduled_send_at": rfc3339(req.send_at),
        "follow_up": {"enabled": req.follow_up_enabled, "after_hours": req.follow_up_after_hours, "due_at": req.follow_up_due_at.map(rfc3339)},
        "clicked_at": req.clicked_at.map(rfc3339),
        "messages": messages.iter().map(|m| json!({
            "kind": m.kind,
            "status": m.status,
            "provider": m.provider,
            "body": m.body,
            "encoding": m.encoding,
            "segments": m.segments,
            "error_code": m.error_code,
            "status_history": m.status_history,
        })).collect::<Vec<_>>(),
        "events": events.iter().map(|e| json!({"at": rfc3339(e.created_at), "event": e.kind, "detail": e.detail})).collect::<Vec<_>>(),
        "next_action": next_action,
    }))
}

pub(super) async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let req = find(&state, &id).await?;
    Ok(Json(view(&state, &req).await?))
}

pub(super) async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let req = find(&state, &id).await?;
    let now = state.clock.now();
    if !reviews::advance(
        &state.db,
        &req.id,
        status::CANCELLED,
        json!({"by": "caller"}),
        now,
    )
    .await
    .map_err(internal)?
    {
        let current = find(&state, &id).await?;
        return Err(ApiError::AlreadyFinal(current.status));
    }
    let req = find(&state, &id).await?;
    Ok(Json(view(&state, &req).await?))
}

/// Redirects to the review page and records the click; the first click ends a pending follow-up.
pub(super) async fn click(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    if token.len() > 64 {
        return Err(ApiError::NotFound);
    }
    let req = review_request::Entity::find()
        .filter(review_request::Column::LinkToken.eq(token))
        .one(&state.db)
        .await
        .map_err(internal)?
        .ok_or(ApiError::NotFound)?;
    let now = state.clock.now();
    link_click::Entity::insert(link_click::ActiveModel {
        id: Set(Uuid::now_v7()),
        request_id: Set(req.id.clone()),
        clicked_at: Set(now),
    })
    .exec(&state.db)
    .await
    .map_err(internal)?;
    let first = review_request::Entity::update_many()
        .col_expr(review_request::Column::ClickedAt, Expr::value(Some(now)))
        .filter(review_request::Column::Id.eq(req.id.clone()))
        .filter(review_request::Column::ClickedAt.is_null())
        .exec(&state.db)
        .await
        .map_err(internal)?
        .rows_affected
        == 1;
    if first {
        reviews::event(&state.db, &req.id, "clicked", json!({}), now)
            .await
            .map_err(internal)?;
        // A click is the outcome we asked for: no reminder after it.
        if [status::SENT, status::DELIVERED, status::FOLLOW_UP_SCHEDULED]
            .contains(&req.status.as_str())
        {
            reviews::advance(
                &state.db,
                &req.id,
                status::COMPLETED,
                json!({"reason": "clicked"}),
                now,
            )
            .await
            .map_err(internal)?;
        }
    }
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(location) = HeaderValue::from_str(&req.review_url) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
