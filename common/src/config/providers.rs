//! The SMS provider's configuration: which one, and what it needs (the model's is in `llm`).

use super::{ConfigError, Secret, invalid};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmsProviderKind {
    /// Stores and logs messages; nothing leaves the machine (development default).
    Outbox,
    Twilio,
}

#[derive(Clone, Debug)]
pub struct TwilioConfig {
    pub account_sid: String,
    pub auth_token: Secret,
    pub from: Option<String>,
    pub messaging_service_sid: Option<String>,
    pub base_url: String,
}

pub(super) fn read_twilio(
    var: &impl Fn(&str) -> Option<String>,
    provider: SmsProviderKind,
) -> Result<Option<TwilioConfig>, ConfigError> {
    if provider != SmsProviderKind::Twilio {
        return Ok(None);
    }
    let account_sid = var("TWILIO_ACCOUNT_SID")
        .ok_or_else(|| invalid("TWILIO_ACCOUNT_SID", "required with SMS_PROVIDER=twilio"))?;
    let auth_token = var("TWILIO_AUTH_TOKEN")
        .ok_or_else(|| invalid("TWILIO_AUTH_TOKEN", "required with SMS_PROVIDER=twilio"))?;
    let from = var("TWILIO_FROM");
    let messaging_service_sid = var("TWILIO_MESSAGING_SERVICE_SID");
    if from.is_none() && messaging_service_sid.is_none() {
        return Err(invalid(
            "TWILIO_FROM",
            "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID",
        ));
    }
    Ok(Some(TwilioConfig {
        account_sid,
        auth_token: Secret::new(auth_token),
        from,
        messaging_service_sid,
        base_url: var("TWILIO_BASE_URL")
            .unwrap_or_else(|| "https://api.twilio.com".into())
            .trim_end_matches('/')
            .to_owned(),
    }))
}
