//! A paid review request becomes rows: its consent and the request itself (status `scheduled`).
//! Written after settlement, idempotently (one request per paid call).

use chrono::{DateTime, Utc};
use grove_common::{
    db::{
        entities::{consent, review_request},
        reviews::{self, status},
    },
    review::{phone::UsPhone, quiet_hours},
};
use rand::RngCore;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

fn str_at<'a>(body: &'a Value, pointer: &str) -> Option<&'a str> {
    body.pointer(pointer).and_then(Value::as_str)
}

/// 128 random bits, URL-safe: `rr_` ids and link tokens.
pub fn token() -> String {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Creates the review request for a settled call, or returns the one already created.
pub async fn create(
    db: &DatabaseConnection,
    call_id: Uuid,
    payer: &str,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<review_request::Model, DbErr> {
    if let Some(existing) = reviews::by_call(db, call_id).await? {
        return Ok(existing);
    }
    let phone = UsPhone::parse(str_at(body, "/customer/phone").unwrap_or_default())
        .map_err(|e| DbErr::Custom(e.to_owned()))?;
    let zone = quiet_hours::zone(
        str_at(body, "/customer/timezone"),
        str_at(body, "/business/timezone").unwrap_or_default(),
    )
    .map_err(|e| DbErr::Custom(e.to_owned()))?;
    let state = quiet_hours::recipient_state(str_at(body, "/customer/state"), &phone);
    let captured_at = str_at(body, "/consent/captured_at")
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(now);
    let send_at = str_at(body, "/send_at")
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .filter(|t| *t > now)
        .unwrap_or(now);
    let follow_up_enabled = body
        .pointer("/follow_up/enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let after_hours = body
        .pointer("/follow_up/after_hours")
        .and_then(Value::as_i64)
        .unwrap_or(72);
    let business_name = str_at(body, "/business/name")
        .unwrap_or_default()
        .to_owned();

    let txn = db.begin().await?;
    let consent_id = Uuid::now_v7();
    consent::Entity::insert(consent::ActiveModel {
        id: Set(consent_id),
        phone: Set(phone.e164().to_owned()),
        business_name: Set(business_name.clone()),
        method: Set(str_at(body, "/consent/method")
            .unwrap_or_default()
            .to_owned()),
        captured_at: Set(captured_at),
        source: Set(str_at(body, "/consent/source")
            .unwrap_or_default()
            .to_owned()),
        disclosure_text: Set(str_at(body, "/consent/disclosure_text").map(str::to_owned)),
        created_at: Set(now),
    })
    .exec(&txn)
    .await?;
    let id = format!("rr_{}", token());
    let model = review_request::Entity::insert(review_request::ActiveModel {
        id: Set(id.clone()),
        call_id: Set(call_id),
        payer: Set(payer.to_owned()),
        phone: Set(phone.e164().to_owned()),
        first_name: Set(str_at(body, "/customer/first_name")
            .unwrap_or_default()
            .to_owned()),
        business_name: Set(business_name),
        review_url: Set(str_at(body, "/business/review_url")
            .unwrap_or_default()
            .to_owned()),
        zone: Set(zone.name().to_owned()),
        recipient_state: Set(state.map(str::to_owned)),
        consent_id: Set(consent_id),
        template: Set(str_at(body, "/message/template").map(str::to_owned)),
        follow_up_enabled: Set(follow_up_enabled),
        follow_up_after_hours: Set(i32::try_from(after_hours).unwrap_or(72)),
        status: Set(status::SCHEDULED.into()),
        send_at: Set(send_at),
        follow_up_due_at: Set(None),
        link_token: Set(token()),
        clicked_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    })
    .exec_with_returning(&txn)
    .await?;
    reviews::event(
        &txn,
        &id,
        status::SCHEDULED,
        json!({"send_at": reviews::rfc3339(send_at), "zone": zone.name(), "state": state}),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(model)
}
