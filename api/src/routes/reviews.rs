//! A tracked review request: its status (masked phone, messages, event log, next action), its
//! cancellation, and the tracked review link (`GET /r/{token}`).

use crate::{error::ApiError, state::AppState};
use axum::{
    Json,
    extract::{Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use grove_common::review_service::ReviewEvent;
use grove_common::{
    db::{
        entities::review_request,
        reviews::{self, rfc3339},
    },
    review::{ReviewStatus, phone::UsPhone},
    review_service,
};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

async fn find(state: &AppState, id: &str) -> Result<review_request::Model, ApiError> {
    if !id.starts_with("rr_") || id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    reviews::load(&state.db, id)
        .await?
        .ok_or(ApiError::NotFound)
}

pub(crate) async fn view(state: &AppState, req: &review_request::Model) -> Result<Value, ApiError> {
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
        // The service is asking the provider whether the text went.
        ReviewStatus::Unconfirmed | ReviewStatus::FollowUpUnconfirmed => {
            json!({"action": "confirm_send", "at": null})
        }
        _ => Value::Null,
    };
    let failure = if req.status == ReviewStatus::Failed {
        review_service::failure(&events)
    } else {
        None
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
        "failure": failure,
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
    let effects = review_service::apply(&state.db, &req.id, ReviewEvent::Cancelled, now).await?;
    let req = find(&state, &id).await?;
    if !effects.changed {
        // Finished meanwhile (or before): say how.
        return Err(ApiError::AlreadyFinal(req.status.to_string()));
    }
    crate::review::act(&state, &req.id, &effects).await?;
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
    // A click is the outcome we asked for: the service records it, and the first one ends a
    // pending follow-up.
    let effects =
        review_service::apply(&state.db, &req.id, ReviewEvent::Clicked, state.clock.now()).await?;
    crate::review::act(&state, &req.id, &effects).await?;
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(location) = HeaderValue::from_str(&req.review_url) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
