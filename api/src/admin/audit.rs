//! The audit table (`admin_audit`): every operator action, refused ones included, with who (the
//! token's name), what, on what, why, when, and the state before and after. Written here only.

use super::Operator;
use crate::{error::ApiError, state::AppState};
use axum::{
    Json,
    extract::{Query, State},
};
use chrono::{DateTime, SecondsFormat, Utc};
use grove_common::db::entities::admin_audit;
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait, QueryOrder, QuerySelect};
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

/// One operator action, as it is written.
pub struct Entry<'a> {
    pub operator: &'a Operator,
    pub action: &'static str,
    pub subject: String,
    pub reason: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl Entry<'_> {
    pub async fn write(self, db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<(), DbErr> {
        admin_audit::Entity::insert(self.row(now))
            .exec_without_returning(db)
            .await?;
        Ok(())
    }

    /// The row as written, for a write that goes in another's transaction (the ledger's, when
    /// an operator resolves a payment).
    pub fn row(self, now: DateTime<Utc>) -> admin_audit::ActiveModel {
        tracing::info!(
            operator = %self.operator.0,
            action = self.action,
            "operator action recorded in the audit"
        );
        admin_audit::ActiveModel {
            id: Set(Uuid::now_v7()),
            operator: Set(self.operator.0.clone()),
            action: Set(self.action.to_owned()),
            subject: Set(self.subject),
            reason: Set(self.reason),
            before: Set(self.before),
            after: Set(self.after),
            created_at: Set(now),
        }
    }
}

/// The newest entries first.
pub async fn recent(
    db: &impl ConnectionTrait,
    limit: u64,
) -> Result<Vec<admin_audit::Model>, DbErr> {
    admin_audit::Entity::find()
        .order_by_desc(admin_audit::Column::CreatedAt)
        .order_by_desc(admin_audit::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

pub fn view(e: &admin_audit::Model) -> Value {
    json!({
        "id": e.id,
        "at": e.created_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "operator": e.operator,
        "action": e.action,
        "subject": e.subject,
        "reason": e.reason,
        "before": e.before,
        "after": e.after,
    })
}

/// `GET /admin/v1/audit?limit=N`: the newest N entries (50 by default, 1-500).
pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::limit(&q, 50, 500)?;
    let rows = recent(&state.db, limit).await?;
    Ok(Json(
        json!({"entries": rows.iter().map(view).collect::<Vec<_>>()}),
    ))
}
