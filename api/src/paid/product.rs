//! What a paid call buys, as the gate sees it. Each product (`crate::products`: a coaching call,
//! a review request) implements this one trait, so the gate has no product branches: it asks
//! the product for its offer and body, lets it take what must be taken atomically before
//! settlement, and after settlement lets it record what was bought and name the job to run.

use crate::{error::ApiError, state::AppState, x402::challenge::Offer};
use async_trait::async_trait;
use grove_common::{
    catalog::{CoachId, ModeId},
    config::Config,
    db::{calls::Runner, entities::call},
    health::ProviderId,
    jobs::Job,
    ledger::CallKind,
    schema::SchemaRegistry,
};
use sea_orm::DbErr;
use serde_json::value::RawValue;
use std::time::Duration;
use uuid::Uuid;

/// What the call record says the call is for (the coach and mode of a coaching call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    pub agent: Option<CoachId>,
    pub mode: Option<ModeId>,
}

/// A product refused at the last step before settlement: nothing is settled, and `error` is
/// the answer (`reason` is what the call records as its unpaid outcome).
#[derive(Debug)]
pub struct NotSold {
    pub reason: &'static str,
    pub error: ApiError,
}

#[async_trait]
pub trait Product: Send + Sync {
    /// The kind of work, recorded on the call.
    fn kind(&self) -> CallKind;

    /// How long an identical request without an idempotency key replays the first answer
    /// instead of buying again (a keyed request always gets `idempotency::KEYED_WINDOW`).
    fn keyless_window(&self) -> Duration;

    /// The call's labels, for its record and for metrics.
    fn labels(&self) -> Labels {
        Labels::default()
    }

    /// The outside provider the work needs, whose health gate decides whether it is priced at
    /// all (`paid::health`); None when it needs none.
    fn provider(&self, config: &Config) -> Option<ProviderId> {
        let _ = config;
        None
    }

    /// Whether its work waits in the coaching queue that admission measures
    /// (`paid::admission`): such a call is priced only while it could finish within the
    /// deadline, and counts as ahead of new ones while it settles.
    fn admitted_by_capacity(&self) -> bool {
        false
    }

    /// What the 402 offers: the resource, its price, its schemas and an example.
    fn offer<'s>(&self, schemas: &'s SchemaRegistry) -> Offer<'s>;

    /// The validated body as the call stores it, in compact JSON text: what the call stores and
    /// idempotency fingerprints. Text, not a JSON tree: a paid call holds its product through
    /// the wait on its work, and a `serde_json::Value` of a conversation is several times the
    /// size of its text (issue 31). The gate parses it once, for the keys and the claim.
    fn stored_body(&self) -> &RawValue;

    /// The last check before settlement, once the call is recorded and its payment reserved:
    /// `Some` refuses the sale and nothing is settled (the review request takes its phone's
    /// cooldown mark here, atomically with a last look at the opt-out list; a refused
    /// settlement gives it back in the ledger's own write, `ledger::record`).
    async fn before_settlement(
        &self,
        state: &AppState,
        call_id: Uuid,
    ) -> Result<Option<NotSold>, DbErr> {
        let _ = (state, call_id);
        Ok(None)
    }

    /// The run to start in the transaction that records the settlement, when this process's
    /// own worker does the work in place (`ledger::record`, issue 12); None: the job is pushed
    /// and a worker starts the run.
    fn run_with_settlement(&self, state: &AppState) -> Option<Runner> {
        let _ = state;
        None
    }

    /// The payment settled: record what it bought (idempotently: a free re-run, reconciliation
    /// and recovery may come through here again) and name the job that does the work.
    async fn after_settled(&self, state: &AppState, call: &call::Model) -> Result<Job, DbErr>;
}
