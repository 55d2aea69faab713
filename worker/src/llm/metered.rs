//! The model provider as `/metrics` sees it: every call counted by outcome, timed, its tokens
//! added up (failed attempts' too: the provider bills them), its errors by kind.

use super::{LlmError, LlmProvider, LlmRequest, LlmResponse};
use grove_common::metrics::{Metrics, catalog as m};
use std::{sync::Arc, time::Instant};

pub struct Metered {
    inner: Arc<dyn LlmProvider>,
    metrics: Arc<Metrics>,
}

impl Metered {
    pub fn new(inner: Arc<dyn LlmProvider>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }
}

#[async_trait::async_trait]
impl LlmProvider for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn enforces_schema(&self) -> bool {
        self.inner.enforces_schema()
    }

    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let started = Instant::now();
        let result = self.inner.complete(request).await;
        let provider = self.inner.name();
        let (outcome, usage) = match &result {
            Ok(r) => ("ok", r.usage),
            Err(e) => (e.kind(), e.usage()),
        };
        let by = [("provider", provider)];
        self.metrics
            .count(m::MODEL_CALLS, &[by[0], ("outcome", outcome)], 1);
        self.metrics
            .observe(m::MODEL_CALL_DURATION, &by, started.elapsed());
        for (direction, tokens) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            self.metrics
                .count(m::MODEL_TOKENS, &[by[0], ("direction", direction)], tokens);
        }
        if result.is_err() {
            self.metrics
                .count(m::MODEL_ERRORS, &[by[0], ("error", outcome)], 1);
        }
        result
    }

    /// A probe is the health gate's, not a call's: not counted.
    async fn probe(&self) -> Result<(), LlmError> {
        self.inner.probe().await
    }
}
