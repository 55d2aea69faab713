//! Opt-outs recorded by an operator: the customer's word counts from any channel (a phone call
//! to the business, an email), not only a STOP text. Both directions go through the review
//! service, which suppresses the number (so the next request to it is refused before any
//! payment, `recipient_opted_out`) and ends the requests to it that have not finished; each is
//! audited with the operator's reason.

use super::{Operator, audit};
use crate::{error::ApiError, extract, state::AppState};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Query, State},
    http::HeaderMap,
};
use chrono::SecondsFormat;
use grove_common::{
    db::entities::suppression, review::phone::UsPhone, review_service, schema::Violation,
};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QueryOrder, QuerySelect};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The longest reason kept.
const MAX_REASON: usize = 500;

/// A phone and the operator's reason, read from a JSON body or the console's form.
pub struct Order {
    pub phone: UsPhone,
    pub reason: String,
}

impl Order {
    pub fn parse(phone: Option<&str>, reason: Option<&str>) -> Result<Self, ApiError> {
        let mut problems = Vec::new();
        let phone = match phone.map(str::trim) {
            None | Some("") => {
                problems.push(Violation::new(
                    "/phone",
                    "is required: the number in E.164 (+1...)",
                ));
                None
            }
            Some(raw) => UsPhone::parse(raw)
                .map_err(|why| problems.push(Violation::new("/phone", why)))
                .ok(),
        };
        let reason = reason.map(str::trim).unwrap_or_default();
        if reason.is_empty() {
            problems.push(Violation::new(
                "/reason",
                "is required: how the customer asked (it goes into the audit)",
            ));
        } else if reason.chars().count() > MAX_REASON {
            problems.push(Violation::new(
                "/reason",
                format!("must be at most {MAX_REASON} characters"),
            ));
        }
        match phone {
            Some(phone) if problems.is_empty() => Ok(Self {
                phone,
                reason: reason.to_owned(),
            }),
            _ => Err(ApiError::Validation(problems)),
        }
    }
}

async fn suppression_of(db: &impl ConnectionTrait, phone: &str) -> Result<Option<Value>, DbErr> {
    Ok(suppression::Entity::find_by_id(phone.to_owned())
        .one(db)
        .await?
        .map(|s| json!({"active": s.active, "reason": s.reason})))
}

/// Suppresses the number and ends its open requests; audited.
pub async fn add(state: &AppState, operator: &Operator, order: Order) -> Result<Value, ApiError> {
    let phone = order.phone.e164();
    let now = state.clock.wall();
    let before = suppression_of(&state.db, phone).await?;
    let ended =
        review_service::operator_opt_out(&state.db, phone, &operator.0, &order.reason, now).await?;
    let mut after = suppression_of(&state.db, phone)
        .await?
        .unwrap_or(Value::Null);
    after["requests_ended"] = json!(ended);
    audit::Entry {
        operator,
        action: "opt_out.add",
        subject: phone.to_owned(),
        reason: Some(order.reason),
        before,
        after: Some(after),
    }
    .write(&state.db, now)
    .await?;
    Ok(json!({"phone": order.phone.masked(), "suppressed": true, "requests_ended": ended}))
}

/// Lifts the number's suppression; audited.
pub async fn remove(
    state: &AppState,
    operator: &Operator,
    order: Order,
) -> Result<Value, ApiError> {
    let phone = order.phone.e164();
    let now = state.clock.wall();
    let before = suppression_of(&state.db, phone).await?;
    review_service::operator_opt_in(&state.db, phone, now).await?;
    let after = suppression_of(&state.db, phone).await?;
    audit::Entry {
        operator,
        action: "opt_out.remove",
        subject: phone.to_owned(),
        reason: Some(order.reason),
        before,
        after,
    }
    .write(&state.db, now)
    .await?;
    Ok(json!({"phone": order.phone.masked(), "suppressed": false}))
}

/// The most recently changed suppressions (opt-outs and lifts), newest first.
pub async fn recent(
    db: &impl ConnectionTrait,
    limit: u64,
) -> Result<Vec<suppression::Model>, DbErr> {
    suppression::Entity::find()
        .order_by_desc(suppression::Column::UpdatedAt)
        .limit(limit)
        .all(db)
        .await
}

/// The number as shown in lists: masked when it parses (every stored one does).
pub fn masked(phone: &str) -> String {
    UsPhone::parse(phone)
        .map(|p| p.masked())
        .unwrap_or_else(|_| "***".into())
}

async fn order_of(headers: &HeaderMap, body: Body) -> Result<Order, ApiError> {
    let body = extract::json_body(headers, body).await?;
    Order::parse(body["phone"].as_str(), body["reason"].as_str())
}

/// `POST /admin/v1/opt-outs` `{"phone", "reason"}`.
pub(super) async fn post_add(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let order = order_of(&headers, body).await?;
    Ok(Json(add(&state, &operator, order).await?))
}

/// `POST /admin/v1/opt-outs/remove` `{"phone", "reason"}`.
pub(super) async fn post_remove(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let order = order_of(&headers, body).await?;
    Ok(Json(remove(&state, &operator, order).await?))
}

/// `GET /admin/v1/opt-outs?limit=N`: the latest changes to the suppression list (full numbers:
/// the operator may need to act on them).
pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::limit(&q, 50, 500)?;
    let rows = recent(&state.db, limit).await?;
    let rows: Vec<Value> = rows
        .iter()
        .map(|s| {
            json!({
                "phone": s.phone,
                "active": s.active,
                "reason": s.reason,
                "updated_at": s.updated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            })
        })
        .collect();
    Ok(Json(json!({"opt_outs": rows})))
}
