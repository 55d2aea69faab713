//! Shared application state, built once by `Application::build`.

use crate::{
    metrics::Metrics,
    render::Published,
    x402::{
        settle::{AuthorizationReader, Settler},
        smart_wallet::WalletVerifier,
    },
};
use grove_common::{
    clock::Clock, completion::Completions, config::Config, health::Gates, queue::JobQueue,
    schema::SchemaRegistry,
};
use sea_orm::DatabaseConnection;
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub schemas: Arc<SchemaRegistry>,
    pub published: Published,
    /// Precomputed `x-{service}-sandbox`.
    pub sandbox_header: String,
    pub db: DatabaseConnection,
    /// New calls' claims on `db` (one statement for many on PostgreSQL: `ledger::Claims`).
    pub claims: grove_common::ledger::Claims,
    /// Paid calls' settled outcomes on `db` (one statement for many on PostgreSQL).
    pub outcomes: grove_common::ledger::Outcomes,
    pub queue: JobQueue,
    pub completions: Completions,
    /// Moves the money: a facilitator, our own settlement on chain, or the development default.
    pub settler: Arc<dyn Settler>,
    /// Reads `authorizationState` on chain for reconciliation (`BASE_RPC_URL`), when configured.
    pub chain: Option<Arc<dyn AuthorizationReader>>,
    /// Asks smart-wallet payers' wallets on chain (`BASE_RPC_URL`), when configured; without it
    /// their payments are refused (`smart_wallet_needs_chain`).
    pub wallets: Option<Arc<dyn WalletVerifier>>,
    /// Wakes the reconciliation sweep at once (an unknown outcome was just recorded).
    pub reconcile: Arc<tokio::sync::Notify>,
    pub metrics: Metrics,
    /// Request rate limits by client address and by payer.
    pub limits: crate::limits::Limits,
    /// Consent age, quiet hours and follow-ups read this clock (tests move it).
    pub clock: Arc<dyn Clock>,
    /// The embedded worker's sweeper (None when `worker` processes run it).
    pub sweeps: Option<Arc<grove_common::jobs::SweepStats>>,
    /// Settled calls whose failed push is being retried.
    pub push_retries: crate::paid::retries::Retries,
    /// The in-process worker's liveness key (None when `worker` processes run the jobs): a
    /// settled coaching call's run starts in the transaction that records the settlement,
    /// leased to that worker (`ledger::record_paid_outcome`).
    pub worker_process: Option<i64>,
    /// The providers' health gates, as this process last read them: a product whose provider's
    /// gate is open answers 503 instead of a price (`paid::health`).
    pub gates: Gates,
    /// Whether a new coaching call could finish within the deadline: past it, unpaid requests
    /// answer 503 instead of a price (`paid::admission`).
    pub admission: crate::paid::admission::Admission,
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    /// How long the oldest paid call's write (its claim or settled outcome) has waited for a
    /// database batch: how far the database is behind (zero on SQLite).
    pub fn write_wait(&self) -> std::time::Duration {
        self.claims.waited().max(self.outcomes.waited())
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
