//! Shared application state, built once by `Application::build`.

use crate::{metrics::Metrics, render::Published, x402::facilitator::Facilitator};
use grove_common::{
    clock::Clock, completion::Completions, config::Config, queue::JobQueue, schema::SchemaRegistry,
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
    pub queue: JobQueue,
    pub completions: Completions,
    pub facilitator: Arc<dyn Facilitator>,
    pub metrics: Metrics,
    /// Consent age, quiet hours and follow-ups read this clock (tests move it).
    pub clock: Arc<dyn Clock>,
    /// The embedded worker's sweeper (None when `worker` processes run it).
    pub sweeps: Option<Arc<grove_common::jobs::SweepStats>>,
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
