//! A coaching call as a product: one answer of one coach in one mode, worked by the coaching job.

use super::StoredCallError;
use crate::{
    error::ApiError,
    paid::{Labels, Product},
    state::AppState,
    x402::challenge::Offer,
};
use async_trait::async_trait;
use grove_common::{
    catalog::{self, Coach, Mode},
    config::Config,
    db::{calls::Runner, entities::call},
    health::ProviderId,
    jobs::{CoachingJob, Job},
    ledger::CallKind,
    requests::CoachingRequest,
    schema::SchemaRegistry,
};
use sea_orm::DbErr;
use serde_json::{json, value::RawValue};
use std::time::Duration;

const KEYLESS_WINDOW: Duration = Duration::from_secs(10 * 60);

pub struct CoachingCall {
    coach: &'static Coach,
    mode: &'static Mode,
    /// The validated request as the call stores it, in compact JSON text
    /// (`Product::stored_body`). The gate needs only this JSON (to store and fingerprint); the
    /// worker reads it back into `CoachingRequest` (`requests::from_stored`).
    body: Box<RawValue>,
}

impl CoachingCall {
    /// Whether paid coaching calls are on sale: a pay-to address and a model provider configured.
    /// The HTTP route and the MCP tool ask before building the product.
    pub fn on_sale(state: &AppState) -> Result<(), ApiError> {
        if state.config.pay_to.is_none() {
            return Err(ApiError::PaymentsDisabled);
        }
        if state.config.llm.is_none() {
            return Err(ApiError::Unavailable(
                "no model provider is configured, so paid coaching calls are not on sale; the sandbox works",
            ));
        }
        Ok(())
    }

    pub fn new(
        coach: &'static Coach,
        mode: &'static Mode,
        request: &CoachingRequest,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            coach,
            mode,
            body: serde_json::value::to_raw_value(request)?,
        })
    }

    /// The call a stored record paid for.
    pub fn stored(call: &call::Model) -> Result<Self, StoredCallError> {
        let (Some(coach), Some(mode)) = (call.agent, call.mode) else {
            return Err(StoredCallError::Labels);
        };
        Ok(Self {
            coach: catalog::coach(coach),
            mode: catalog::mode(mode),
            body: serde_json::value::to_raw_value(&call.request)?,
        })
    }
}

#[async_trait]
impl Product for CoachingCall {
    fn kind(&self) -> CallKind {
        CallKind::Coaching
    }

    /// It waits on the model, in the queue admission measures.
    fn admitted_by_capacity(&self) -> bool {
        true
    }

    /// Ten minutes, so that a plain retry is safe (interface spec, "idempotency window
    /// without key").
    fn keyless_window(&self) -> Duration {
        KEYLESS_WINDOW
    }

    fn labels(&self) -> Labels {
        Labels {
            agent: Some(self.coach.id),
            mode: Some(self.mode.id),
        }
    }

    /// The configured model: every coach and mode asks it.
    fn provider(&self, config: &Config) -> Option<ProviderId> {
        ProviderId::of_model(config)
    }

    fn offer<'s>(&self, schemas: &'s SchemaRegistry) -> Offer<'s> {
        let (coach, mode) = (self.coach, self.mode);
        Offer {
            path: coach.call_path(),
            description: format!(
                "{} ({}): {} ({} tier, {})",
                coach.name,
                coach.domain,
                mode.id,
                mode.tier.as_str(),
                mode.price()
            ),
            price: mode.price(),
            request_schema: schemas.mode(mode.id).request.json(),
            request_schema_path: mode.request_schema_path(),
            response_schema_path: mode.response_schema_path(),
            example_body: json!({"mode": mode.id, "messages": [{"role": "user", "content": "Where should we focus next?"}]}),
        }
    }

    fn stored_body(&self) -> &RawValue {
        &self.body
    }

    /// With the worker in this process, the coaching run starts with its settlement.
    fn run_with_settlement(&self, state: &AppState) -> Option<Runner> {
        state.worker_process.map(|process| Runner {
            run: uuid::Uuid::now_v7(),
            process,
        })
    }

    async fn after_settled(&self, _state: &AppState, call: &call::Model) -> Result<Job, DbErr> {
        Ok(Job::Coaching(CoachingJob::new(
            call.id,
            crate::request_id::current(),
        )))
    }
}
