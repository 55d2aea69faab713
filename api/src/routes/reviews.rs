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
        reviews::{self, lifecycle, rfc3339},
    },
    review::{ReviewStatus, phone::UsPhone},
};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::{Value, json};
use uuid::Uuid;

async fn find(state: &AppState, id: &str) -> Result<review_request::Model, ApiError> {
    if !id.starts_with("rr_") || id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    reviews::load(&state.db, id)
        .await?
        .ok_or(ApiError::NotFound)
}

async fn view(state: &AppState, req: &review_request::Model) -> Result<Value, ApiError> {
    let messages = reviews::messages(&state.db, &req.id).await?;
    let events = reviews::events(&state.db, &req.id).await?;
    let masked = UsPhone::parse(&req.phone)
        .map(|p| p.masked())
        .unwrap_or_else(|_| "***".into());
    let next_action = match req.status {
        ReviewStatus::Scheduled | ReviewStatus::Deferred => {
            json!({"action": "send", "at": rfc3339(req.send_at)})
        }
        ReviewStatus::FollowUpScheduled => {
            json!({"action": "follow_up", "at": req.follow_up_due_at.map(rfc3339)})
        }
        ReviewStatus::Sent => json!({"action": "await_delivery", "at": null}),
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
    let mut req = find(&state, &id).await?;
    let now = state.clock.now();
    let to = ReviewStatus::Cancelled;
    if !lifecycle::advance(&state.db, &req.id, to, json!({"by": "caller"}), now).await? {
        // Finished meanwhile (or before): say how.
        let current = find(&state, &id).await?;
        return Err(ApiError::AlreadyFinal(current.status.to_string()));
    }
    req.status = to;
    req.updated_at = now;
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
        .await?
        .ok_or(ApiError::NotFound)?;
    let now = state.clock.now();
    link_click::Entity::insert(link_click::ActiveModel {
        id: Set(Uuid::now_v7()),
        request_id: Set(req.id.clone()),
        clicked_at: Set(now),
    })
    .exec(&state.db)
    .await?;
    let first = review_request::Entity::update_many()
        .col_expr(review_request::Column::ClickedAt, Expr::value(Some(now)))
        .filter(review_request::Column::Id.eq(req.id.clone()))
        .filter(review_request::Column::ClickedAt.is_null())
        .exec(&state.db)
        .await?
        .rows_affected
        == 1;
    if first {
        reviews::event(&state.db, &req.id, "clicked", json!({}), now).await?;
        // A click is the outcome we asked for: no reminder after it.
        if req.status.completes_on_click() {
            lifecycle::advance(
                &state.db,
                &req.id,
                ReviewStatus::Completed,
                json!({"reason": "clicked"}),
                now,
            )
            .await?;
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
