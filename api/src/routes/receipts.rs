//! `GET /api/v1/receipts/{id}` (CONTRACT 6): the stored result of a paid call.

use crate::{error::ApiError, state::AppState};
use axum::{
    Json,
    extract::{Path, State},
};
use chrono::SecondsFormat;
use grove_common::{
    catalog,
    db::{
        calls,
        entities::{payment, receipt},
    },
    ledger::CallStatus,
    money::UsdcAmount,
};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

pub(super) async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    // Ids are 32 hex characters; anything else cannot exist, so skip the lookup.
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::NotFound);
    }
    let Some(rec) = receipt::Entity::find_by_id(id.clone())
        .one(&state.db)
        .await?
    else {
        return Err(ApiError::NotFound);
    };
    if rec.expires_at < state.clock.wall() {
        return Err(ApiError::NotFound);
    }
    let call = calls::load(&state.db, rec.call_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let pay = payment::Entity::find()
        .filter(payment::Column::CallId.eq(rec.call_id))
        .one(&state.db)
        .await?;
    let result = calls::load_result(&state.db, rec.call_id)
        .await?
        .map(|r| r.body);
    let status = match call.status {
        CallStatus::Completed => "completed",
        CallStatus::Failed => "failed",
        // The settlement was refused (or proven never to happen): nothing was bought.
        CallStatus::Unpaid => "unpaid",
        _ => "pending",
    };
    // settled | unsettled (development) | unknown (being reconciled) | refused | reserved.
    let settlement = pay.as_ref().map(|p| p.status.as_str());
    let amount = pay
        .as_ref()
        .and_then(|p| p.amount.parse::<u64>().ok())
        .map(UsdcAmount::from_atomic)
        .or_else(|| call.mode.map(|m| catalog::mode(m).price()));
    Ok(Json(json!({
        "id": rec.id,
        "kind": rec.kind,
        "status": status,
        "created_at": rec.created_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "payer": call.payer,
        "amount_usd": amount.map(|a| a.decimal_usd()),
        "network": pay.as_ref().map(|p| p.network.clone()),
        "settlement": settlement,
        "transaction": pay.and_then(|p| p.transaction).filter(|t| !t.is_empty()),
        "result": result,
    })))
}
