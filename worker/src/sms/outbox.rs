//! The development outbox: sends nothing, logs what would have been sent. `APP_ENV=production`
//! refuses to start with it (see `Config`), so its log lines never hold a real customer's text.

use super::{OutgoingSms, SentSms, SmsError, SmsProvider, mask_phone};

#[derive(Clone, Copy, Debug, Default)]
pub struct OutboxProvider;

impl OutboxProvider {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl SmsProvider for OutboxProvider {
    fn name(&self) -> &'static str {
        "outbox"
    }

    async fn send(&self, sms: &OutgoingSms) -> Result<SentSms, SmsError> {
        // Shaped like a Twilio sid (two letters, 32 hex) so storage and logs treat both alike.
        let provider_id = format!("OB{:032x}", rand::random::<u128>());
        // The text is logged so a developer can follow the review link; the number never is.
        tracing::info!(
            provider = "outbox",
            reference = %sms.reference,
            to = %mask_phone(&sms.to),
            provider_id = %provider_id,
            body = %sms.body,
            "sms not sent: SMS_PROVIDER=outbox"
        );
        Ok(SentSms {
            provider_id,
            status: grove_common::review::MessageStatus::Sent,
            segments: None,
        })
    }
}
