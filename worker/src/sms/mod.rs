//! The SMS provider layer: one trait, a Twilio client, and the development outbox that sends
//! nothing. A provider hands one message to the network and reports what the provider said at
//! that moment; delivery arrives later through status callbacks, which the api handles.
//!
//! Phone numbers and message bodies are personal data: nothing here logs either in full, and
//! provider messages are scrubbed of phone numbers before they reach an error or a log line.

mod error;
mod metered;
mod outbox;
mod twilio;
pub mod twilio_probe;
mod watched;

pub use crate::retry::RetryPolicy;
pub use error::SmsError;
pub use metered::Metered;
pub use outbox::OutboxProvider;
pub use twilio::TwilioProvider;
pub use watched::{SmsProbe, Watched};

use grove_common::config::{Config, SmsProviderKind};
use std::{fmt, sync::Arc};

/// Twilio's bounds on `ValidityPeriod`, in seconds.
pub const VALIDITY_PERIOD_S: std::ops::RangeInclusive<u32> = 1..=36_000;

#[derive(Clone)]
pub struct OutgoingSms {
    /// E.164, e.g. `+14155550123`.
    pub to: String,
    pub body: String,
    /// Where the provider posts status changes; include our attempt id in its query so a
    /// timed-out send can be reconciled.
    pub status_callback: Option<String>,
    /// Drop the message if it is still queued after this long (clamped to 1..=36000; Twilio's
    /// own default is 36000), so a queued message cannot land in quiet hours.
    pub validity_period_s: Option<u32>,
    /// Our message id, for logs.
    pub reference: String,
}

// By hand, so a `{:?}` in a log line cannot print the number or the text.
impl fmt::Debug for OutgoingSms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingSms")
            .field("to", &mask_phone(&self.to))
            .field("body_chars", &self.body.chars().count())
            .field("status_callback", &self.status_callback.is_some())
            .field("validity_period_s", &self.validity_period_s)
            .field("reference", &self.reference)
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentSms {
    /// Twilio's message sid (`SM…`), or `OB…` from the outbox.
    pub provider_id: String,
    /// The provider's status: `queued`, `accepted`, `sent`, …
    pub status: grove_common::review::MessageStatus,
    /// Billed segments; `None` when the provider has not counted them yet (Twilio reports 0
    /// until a Messaging Service has picked a sender).
    pub segments: Option<u32>,
}

/// A message to look for: one the provider sent to `to` since `since`, with exactly `body`
/// (the tracked link makes every text unique).
#[derive(Clone)]
pub struct SentQuery<'a> {
    pub to: &'a str,
    pub body: &'a str,
    pub since: chrono::DateTime<chrono::Utc>,
}

/// What a lookup found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The provider has the message: its id, status and error code as it lists them.
    Found {
        provider_id: String,
        status: grove_common::review::MessageStatus,
        error_code: Option<i32>,
    },
    /// None of the listed messages is this one.
    NotListed,
    /// This provider cannot list what it sent.
    Unsupported,
}

#[async_trait::async_trait]
pub trait SmsProvider: Send + Sync {
    /// A stable label for logs and metrics: `twilio` or `outbox`.
    fn name(&self) -> &'static str;
    async fn send(&self, sms: &OutgoingSms) -> Result<SentSms, SmsError>;

    /// The health gate's probe (`grove_common::health`): one cheap authenticated request that
    /// sends nothing. `Ok` for a provider that has nothing to ask (the outbox).
    async fn probe(&self) -> Result<(), SmsError> {
        Ok(())
    }

    /// This provider's health gate as last read (`Watched`); None when nothing watches it. A
    /// send path that finds it not admitting (`GateView::admits`) can hold a text for later
    /// instead of failing it against a provider known to be down.
    fn gate(&self) -> Option<grove_common::health::GateView> {
        None
    }

    /// Finds out whether a send whose answer was lost went: the provider's list of the messages
    /// it sent to the number. Safe to repeat (a read).
    async fn find_sent(&self, _query: &SentQuery<'_>) -> Result<Lookup, SmsError> {
        Ok(Lookup::Unsupported)
    }
}

/// Builds the provider `SMS_PROVIDER` names, with the default retry policy.
pub fn from_config(config: &Config) -> Result<Arc<dyn SmsProvider>, SmsError> {
    match config.sms_provider {
        SmsProviderKind::Outbox => Ok(Arc::new(OutboxProvider::new())),
        SmsProviderKind::Twilio => {
            let twilio = config.twilio.as_ref().ok_or_else(|| SmsError::Config {
                message: "SMS_PROVIDER=twilio needs the TWILIO_* settings".into(),
            })?;
            Ok(Arc::new(TwilioProvider::new(twilio, RetryPolicy::SMS)?))
        }
    }
}

/// A phone number fit for a log line: `+14155550123` → `+1***0123`. Shows the first digit
/// (the country for `+1`) and the last four, which is enough to tell messages apart.
pub fn mask_phone(phone: &str) -> String {
    let digits: Vec<char> = phone.chars().filter(char::is_ascii_digit).collect();
    let plus = if phone.trim_start().starts_with('+') {
        "+"
    } else {
        ""
    };
    if digits.len() < 7 {
        // Too short to show any part without showing most of it.
        return "***".into();
    }
    let tail: String = digits[digits.len() - 4..].iter().collect();
    format!("{plus}{}***{tail}", digits[0])
}

/// Masks every run of seven or more digits (with an optional leading `+`): Twilio's error
/// messages quote the number they refused, e.g. "The 'To' number +1415… is not a valid phone
/// number".
pub(crate) fn redact_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let digits = run.chars().filter(char::is_ascii_digit).count();
        if digits >= 7 {
            out.push_str(&mask_phone(run));
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() || (c == '+' && run.is_empty()) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            if c == '+' {
                run.push(c);
            } else {
                out.push(c);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_are_masked_to_country_and_last_four() {
        assert_eq!(mask_phone("+14155550123"), "+1***0123");
        assert_eq!(mask_phone("447700900123"), "4***0123");
        assert_eq!(mask_phone("+12345"), "***");
    }

    #[test]
    fn numbers_in_provider_text_are_masked_and_short_codes_kept() {
        let text = "The 'To' number +15005550001 is not a valid phone number. See 21211, 12+3";
        assert_eq!(
            redact_numbers(text),
            "The 'To' number +1***0001 is not a valid phone number. See 21211, 12+3"
        );
        assert_eq!(redact_numbers("call 4155550123."), "call 4***0123.");
    }

    #[test]
    fn debug_output_hides_the_number_and_the_text() {
        let sms = OutgoingSms {
            to: "+14155550123".into(),
            body: "Hi Dana".into(),
            status_callback: None,
            validity_period_s: Some(1800),
            reference: "msg_1".into(),
        };
        let debug = format!("{sms:?}");
        assert!(
            !debug.contains("4155550123") && !debug.contains("Dana"),
            "{debug}"
        );
    }
}
