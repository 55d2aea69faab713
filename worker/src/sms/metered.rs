//! The SMS provider as `/metrics` sees it: every send counted by outcome (sent, failed, or
//! unknown when its answer was lost), and every failure by the provider's error code.

use super::{Lookup, OutgoingSms, SentQuery, SentSms, SmsError, SmsProvider};
use grove_common::{
    health::GateView,
    metrics::{Metrics, catalog as m},
};
use std::sync::Arc;

pub struct Metered {
    inner: Arc<dyn SmsProvider>,
    metrics: Arc<Metrics>,
}

impl Metered {
    pub fn new(inner: Arc<dyn SmsProvider>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }
}

#[async_trait::async_trait]
impl SmsProvider for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn send(&self, sms: &OutgoingSms) -> Result<SentSms, SmsError> {
        let result = self.inner.send(sms).await;
        let provider = ("provider", self.inner.name());
        let outcome = match &result {
            Ok(_) => "sent",
            Err(e) if e.may_have_been_sent() => "unknown",
            Err(_) => "failed",
        };
        self.metrics
            .count(m::SMS_SENDS, &[provider, ("outcome", outcome)], 1);
        if let Err(e) = &result {
            let code = e
                .code()
                .map_or_else(|| "none".to_owned(), |c| c.to_string());
            self.metrics
                .count(m::SMS_SEND_ERRORS, &[provider, ("code", &code)], 1);
        }
        result
    }

    async fn probe(&self) -> Result<(), SmsError> {
        self.inner.probe().await
    }

    fn gate(&self) -> Option<GateView> {
        self.inner.gate()
    }

    async fn find_sent(&self, query: &SentQuery<'_>) -> Result<Lookup, SmsError> {
        self.inner.find_sent(query).await
    }
}
