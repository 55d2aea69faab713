//! A review request as a product: one text to one customer, sold only while the phone is not
//! opted out and outside the asked cooldown, recorded as a tracked request once paid.

use super::StoredCallError;
use crate::{
    error::ApiError,
    paid::{NotSold, Product, idempotency::KEYED_WINDOW},
    review::plan,
    state::AppState,
    x402::challenge::Offer,
};
use async_trait::async_trait;
use grove_common::{
    catalog::REVIEW_REQUEST,
    config::Config,
    db::{
        entities::call,
        phone_marks::{self, Sale},
    },
    health::ProviderId,
    jobs::{Job, ReviewJob, ReviewStep},
    ledger::CallKind,
    requests::{self, ReviewRequestBody},
    schema::SchemaRegistry,
};
use sea_orm::DbErr;
use serde_json::{json, value::RawValue};
use std::time::Duration;
use uuid::Uuid;

pub struct ReviewPurchase {
    body: ReviewRequestBody,
    /// `body` as the call stores it, as compact JSON text (`Product::stored_body`).
    json: Box<RawValue>,
}

impl ReviewPurchase {
    pub fn new(body: ReviewRequestBody) -> Result<Self, serde_json::Error> {
        let json = serde_json::value::to_raw_value(&body)?;
        Ok(Self { body, json })
    }

    /// The request a stored record paid for, read back as its type.
    pub fn stored(call: &call::Model) -> Result<Self, StoredCallError> {
        Ok(Self {
            body: requests::from_stored(&call.request)?,
            json: serde_json::value::to_raw_value(&call.request)?,
        })
    }
}

#[async_trait]
impl Product for ReviewPurchase {
    fn kind(&self) -> CallKind {
        CallKind::ReviewRequest
    }

    /// A keyless retry must never send a second SMS, so its window is the keyed one.
    fn keyless_window(&self) -> Duration {
        KEYED_WINDOW
    }

    /// Twilio (the outbox sends nothing, so it has no gate).
    fn provider(&self, config: &Config) -> Option<ProviderId> {
        ProviderId::of_sms(config)
    }

    fn offer<'s>(&self, schemas: &'s SchemaRegistry) -> Offer<'s> {
        Offer {
            path: REVIEW_REQUEST.call_path(),
            description: format!("{} ({})", REVIEW_REQUEST.name, REVIEW_REQUEST.price),
            price: REVIEW_REQUEST.price,
            request_schema: schemas.action().request.json(),
            request_schema_path: REVIEW_REQUEST.request_schema_path(),
            response_schema_path: REVIEW_REQUEST.response_schema_path(),
            example_body: json!({
                "business": {"name": "Harbor Physio", "review_url": "https://example.com/review", "timezone": "America/New_York"},
                "customer": {"phone": "+13055550142", "first_name": "Dana"},
                "consent": {"method": "web_form_checkbox", "captured_at": "2026-10-02T15:04:05-04:00", "source": "intake form"},
            }),
        }
    }

    fn stored_body(&self) -> &RawValue {
        &self.json
    }

    /// Since the pre-payment checks another request to this phone may have been sold inside
    /// the cooldown, or the phone may have opted out: then this one is not sold, and nothing is
    /// settled. The phone's mark is taken atomically with a last look at the opt-out list.
    async fn before_settlement(
        &self,
        state: &AppState,
        call_id: Uuid,
    ) -> Result<Option<NotSold>, DbErr> {
        let phone = self.body.customer.phone.e164();
        let days = self.body.cooldown_days();
        let now = state.clock.now();
        Ok(
            match phone_marks::take_for_sale(&state.db, phone, call_id, now, days).await? {
                Sale::Marked => None,
                Sale::CooldownActive => Some(NotSold {
                    reason: "cooldown_active",
                    error: ApiError::CooldownActive { days },
                }),
                Sale::OptedOut => Some(NotSold {
                    reason: "recipient_opted_out",
                    error: ApiError::RecipientOptedOut,
                }),
            },
        )
    }

    /// The tracked request is created (or found, when this runs again), and its first send is
    /// the job.
    async fn after_settled(&self, state: &AppState, call: &call::Model) -> Result<Job, DbErr> {
        let now = state.clock.now();
        let request = plan::create(&state.db, call.id, &call.payer, &self.body, now).await?;
        Ok(Job::Review(ReviewJob::new(
            request.id,
            ReviewStep::Send,
            crate::request_id::current(),
        )))
    }
}
