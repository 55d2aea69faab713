//! A paid request comes into being: its row, in its first state, and the first entry of its log.

use super::store;
use crate::db::{entities::review_request, reviews::rfc3339};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::json;

/// Records `row` (whatever state it carries, it starts `scheduled`) in the caller's transaction.
pub async fn create(
    db: &impl ConnectionTrait,
    row: review_request::ActiveModel,
    now: DateTime<Utc>,
) -> Result<review_request::Model, DbErr> {
    let detail = {
        let send_at = row.send_at.clone().take().map(rfc3339);
        let zone = row.zone.clone().take();
        let state = row.recipient_state.clone().take().flatten();
        json!({"send_at": send_at, "zone": zone, "state": state})
    };
    store::insert(db, row, detail, now).await
}
