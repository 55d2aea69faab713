//! The SMS provider as its health gate sees it: every send's outcome is reported
//! (`grove_common::health`), and the gate's probe is the provider's own.
//!
//! Counted against Twilio's health: a send that found it unreachable, timing out, answering 5xx,
//! or still rate-limiting after the retries; our credentials refused (401, 403). Not counted:
//! what one message caused (an opted-out recipient, a number that cannot take texts, a request
//! Twilio rejected for its content).

use super::{Lookup, OutgoingSms, SentQuery, SentSms, SmsError, SmsProvider};
use futures::future::BoxFuture;
use grove_common::health::{GateView, Gates, Outcome, Probe, ProviderId};
use std::sync::Arc;

pub struct Watched {
    inner: Arc<dyn SmsProvider>,
    gates: Gates,
    provider: ProviderId,
}

impl Watched {
    pub fn new(inner: Arc<dyn SmsProvider>, gates: Gates, provider: ProviderId) -> Self {
        Self {
            inner,
            gates,
            provider,
        }
    }
}

/// What one send says about the provider's health; None when it says nothing.
fn outcome(result: &Result<SentSms, SmsError>) -> Option<Outcome> {
    match result {
        Ok(_) => Some(Outcome::Succeeded),
        Err(e @ SmsError::Transient { .. }) => Some(Outcome::Failed(e.to_string())),
        Err(
            e @ SmsError::Rejected {
                status: 401 | 403, ..
            },
        ) => Some(Outcome::Failed(e.to_string())),
        Err(_) => None,
    }
}

#[async_trait::async_trait]
impl SmsProvider for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn send(&self, sms: &OutgoingSms) -> Result<SentSms, SmsError> {
        let result = self.inner.send(sms).await;
        if let Some(outcome) = outcome(&result) {
            self.gates.record(&self.provider, outcome).await;
        }
        result
    }

    async fn probe(&self) -> Result<(), SmsError> {
        self.inner.probe().await
    }

    fn gate(&self) -> Option<GateView> {
        self.gates.view(&self.provider)
    }

    /// A lookup is a read of what was sent, not a send: it says nothing of the provider's health
    /// for texts, so it is passed through uncounted.
    async fn find_sent(&self, query: &SentQuery<'_>) -> Result<Lookup, SmsError> {
        self.inner.find_sent(query).await
    }
}

/// The gate's probe for an SMS provider.
pub struct SmsProbe(pub Arc<dyn SmsProvider>);

impl Probe for SmsProbe {
    fn probe(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.0.probe().await.map_err(|e| e.to_string()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::review::MessageStatus;

    #[test]
    fn only_what_the_provider_did_counts() {
        let sent = Ok(SentSms {
            provider_id: "SM1".into(),
            status: MessageStatus::Queued,
            segments: None,
        });
        assert_eq!(outcome(&sent), Some(Outcome::Succeeded));
        let down = Err(SmsError::Transient {
            status: None,
            code: None,
            message: "could not connect".into(),
            may_have_been_sent: false,
        });
        assert!(matches!(outcome(&down), Some(Outcome::Failed(_))));
        let refused_key = Err(SmsError::Rejected {
            status: 401,
            code: Some(20003),
            message: "Authenticate".into(),
        });
        assert!(matches!(outcome(&refused_key), Some(Outcome::Failed(_))));
        for own in [
            SmsError::OptedOut { code: 21610 },
            SmsError::Undeliverable {
                code: 21211,
                message: String::new(),
            },
            SmsError::Rejected {
                status: 400,
                code: Some(21606),
                message: String::new(),
            },
        ] {
            assert_eq!(outcome(&Err(own)), None);
        }
    }
}
