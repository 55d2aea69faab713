//! A paid review request becomes rows: its consent and the request itself (status `scheduled`,
//! recorded by the review service). Written after settlement, idempotently (one request per
//! paid call).

use chrono::{DateTime, Utc};
use grove_common::review_service;
use grove_common::{
    db::{
        entities::{consent, review_request},
        reviews,
    },
    requests::ReviewRequestBody,
    review::quiet_hours,
};
use rand::RngCore;
use sea_orm::{ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, TransactionTrait};
use uuid::Uuid;

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
    body: &ReviewRequestBody,
    now: DateTime<Utc>,
) -> Result<review_request::Model, DbErr> {
    if let Some(existing) = reviews::by_call(db, call_id).await? {
        return Ok(existing);
    }
    let phone = &body.customer.phone;
    let zone = quiet_hours::zone(body.customer.timezone.as_deref(), &body.business.timezone)
        .map_err(|e| DbErr::Custom(e.to_owned()))?;
    let state = quiet_hours::recipient_state(body.customer.state.as_deref(), phone);
    let captured_at = body.consent.captured_at.instant();
    let send_at = body.send_at(now);
    let business_name = body.business.name.clone();

    let txn = db.begin().await?;
    let consent_id = Uuid::now_v7();
    consent::Entity::insert(consent::ActiveModel {
        id: Set(consent_id),
        phone: Set(phone.e164().to_owned()),
        business_name: Set(business_name.clone()),
        method: Set(body.consent.method.clone()),
        captured_at: Set(captured_at),
        source: Set(body.consent.source.clone()),
        disclosure_text: Set(body.consent.disclosure_text.clone()),
        created_at: Set(now),
    })
    .exec(&txn)
    .await?;
    let id = format!("rr_{}", token());
    let row = review_request::ActiveModel {
        id: Set(id.clone()),
        call_id: Set(call_id),
        payer: Set(payer.to_owned()),
        phone: Set(phone.e164().to_owned()),
        first_name: Set(body.customer.first_name.clone()),
        business_name: Set(business_name),
        review_url: Set(body.business.review_url.clone()),
        zone: Set(zone.name().to_owned()),
        recipient_state: Set(state.map(str::to_owned)),
        consent_id: Set(consent_id),
        template: Set(body.template().map(str::to_owned)),
        follow_up_enabled: Set(body.follow_up_enabled()),
        follow_up_after_hours: Set(i32::from(body.follow_up_after_hours())),
        // The state (`scheduled`) and the log's first entry are the review service's to write.
        status: sea_orm::ActiveValue::NotSet,
        send_at: Set(send_at),
        follow_up_due_at: Set(None),
        link_token: Set(token()),
        clicked_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    let model = review_service::create(&txn, row, now).await?;
    txn.commit().await?;
    Ok(model)
}
