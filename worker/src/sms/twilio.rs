//! Twilio Programmable Messaging: `POST {base}/2010-04-01/Accounts/{sid}/Messages.json`, form
//! encoded, HTTP Basic auth with the account sid and auth token.

mod list;

use super::error::{classify_failure, scrub};
use super::{
    Lookup, OutgoingSms, RetryPolicy, SentQuery, SentSms, SmsError, SmsProvider, VALIDITY_PERIOD_S,
    mask_phone,
};
use crate::log_text::error_chain;
use crate::retry::{self, Failure};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::{config::TwilioConfig, review::MessageStatus};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use std::time::Duration;

/// Who the message is from. A Messaging Service wins when both are configured: it is what
/// binds the traffic to a 10DLC campaign and turns on Twilio's opt-out handling.
#[derive(Clone, Debug)]
enum Sender {
    MessagingService(String),
    From(String),
}

pub struct TwilioProvider {
    client: reqwest::Client,
    /// `TWILIO_BASE_URL` without its trailing slash (the list's next pages are paths on it).
    base: String,
    /// The account's Messages resource.
    url: String,
    /// The account resource (`GET …/Accounts/{sid}.json`): the health probe's request.
    account_url: String,
    /// Built once and marked sensitive, so no header dump can print the token.
    authorization: HeaderValue,
    sender: Sender,
    retry: RetryPolicy,
}

/// HTTP Basic auth with the account sid and auth token, marked sensitive so no header dump can
/// print the token.
pub(super) fn basic_auth(config: &TwilioConfig) -> Result<HeaderValue, SmsError> {
    let config_error = |message: &str| SmsError::Config {
        message: message.to_owned(),
    };
    let token = config.auth_token.expose();
    if token.is_empty() {
        return Err(config_error("TWILIO_AUTH_TOKEN is empty"));
    }
    let credentials = STANDARD.encode(format!("{}:{token}", config.account_sid));
    let mut authorization = HeaderValue::from_str(&format!("Basic {credentials}"))
        .map_err(|_| config_error("TWILIO_AUTH_TOKEN cannot be sent in a header"))?;
    authorization.set_sensitive(true);
    Ok(authorization)
}

impl TwilioProvider {
    /// Fails on settings that could never send: a malformed account sid or base URL, an empty
    /// token, no sender.
    pub fn new(config: &TwilioConfig, retry: RetryPolicy) -> Result<Self, SmsError> {
        let config_error = |message: &str| SmsError::Config {
            message: message.to_owned(),
        };
        let sid = config.account_sid.as_str();
        // It goes into the URL path, so only the characters a sid can hold (AC + 32 hex).
        if sid.is_empty() || !sid.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(config_error(
                "TWILIO_ACCOUNT_SID must be letters and digits (AC…)",
            ));
        }
        let authorization = basic_auth(config)?;

        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/2010-04-01/Accounts/{sid}/Messages.json");
        let account_url = format!("{base}/2010-04-01/Accounts/{sid}.json");
        match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
            _ => return Err(config_error("TWILIO_BASE_URL must be an http(s) URL")),
        }
        let non_empty = |s: &Option<String>| s.as_ref().filter(|s| !s.trim().is_empty()).cloned();
        let sender = match (
            non_empty(&config.messaging_service_sid),
            non_empty(&config.from),
        ) {
            (Some(service), _) => Sender::MessagingService(service),
            (None, Some(from)) => Sender::From(from),
            (None, None) => {
                return Err(config_error(
                    "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID",
                ));
            }
        };
        let client = grove_common::http_client::builder()
            .user_agent(concat!("grove-worker/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(retry.request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| config_error(&format!("HTTP client: {e}")))?;
        Ok(Self {
            client,
            base: base.to_owned(),
            url,
            account_url,
            authorization,
            sender,
            retry,
        })
    }

    fn form(&self, sms: &OutgoingSms) -> Vec<(&'static str, String)> {
        let mut fields = vec![("To", sms.to.clone())];
        fields.push(match &self.sender {
            Sender::MessagingService(sid) => ("MessagingServiceSid", sid.clone()),
            Sender::From(from) => ("From", from.clone()),
        });
        fields.push(("Body", sms.body.clone()));
        if let Some(url) = &sms.status_callback {
            fields.push(("StatusCallback", url.clone()));
        }
        if let Some(seconds) = sms.validity_period_s {
            let clamped = seconds.clamp(*VALIDITY_PERIOD_S.start(), *VALIDITY_PERIOD_S.end());
            fields.push(("ValidityPeriod", clamped.to_string()));
        }
        fields
    }

    async fn attempt(
        &self,
        form: &[(&'static str, String)],
        timeout: Duration,
    ) -> Result<SentSms, Failure<SmsError>> {
        let response = self
            .client
            .post(&self.url)
            .header(AUTHORIZATION, self.authorization.clone())
            .form(form)
            .timeout(timeout)
            .send()
            .await
            .map_err(transport_failure)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let accepted = (200..300).contains(&status);
        let body = match response.text().await {
            Ok(body) => body,
            Err(e) if accepted => return Err(maybe_sent(Some(status), &e)),
            // The status already says nothing was sent; classify it without a body.
            Err(_) => String::new(),
        };
        if !accepted {
            return Err(classify_failure(status, &headers, &body));
        }
        read_message(&body).ok_or_else(|| {
            Failure::Final(SmsError::Transient {
                status: Some(status),
                code: None,
                message: format!(
                    "Twilio answered {status} without a message sid; the message may have been sent"
                ),
                may_have_been_sent: true,
            })
        })
    }
}

#[async_trait::async_trait]
impl SmsProvider for TwilioProvider {
    fn name(&self) -> &'static str {
        "twilio"
    }

    #[tracing::instrument(name = "sms.send", skip_all, fields(otel.kind = "client", provider = "twilio", reference = %sms.reference, to = %mask_phone(&sms.to)))]
    async fn send(&self, sms: &OutgoingSms) -> Result<SentSms, SmsError> {
        let form = self.form(sms);
        // No deadline: a send job's own schedule bounds it, and only failures where Twilio
        // certainly took nothing are retried (see `classify_failure`).
        let label = retry::Label {
            provider: self.name(),
            action: "sms send",
        };
        let outcome = retry::run(&self.retry, None, label, |t| self.attempt(&form, t)).await;
        let (result, attempts) = (outcome.result, outcome.attempts);
        match &result {
            Ok(sent) => tracing::info!(
                provider_id = %sent.provider_id,
                status = %sent.status,
                segments = sent.segments,
                attempts,
                "sms handed to twilio"
            ),
            Err(error) => tracing::warn!(attempts, code = error.code(), %error, "sms not sent"),
        }
        result
    }

    /// Fetches the account: free, authenticated, on the host and with the credentials a send
    /// uses, and it texts nobody (a real send is no probe: it would need a recipient and cost a
    /// message). It does not prove Twilio accepts messages right now; real sends tell that,
    /// and open the gate again if they keep failing.
    async fn probe(&self) -> Result<(), SmsError> {
        let response = self
            .client
            .get(&self.account_url)
            .header(AUTHORIZATION, self.authorization.clone())
            .timeout(self.retry.request_timeout.min(Duration::from_secs(8)))
            .send()
            .await
            .map_err(|e| match transport_failure(e) {
                Failure::Retry { error, .. } | Failure::Final(error) => error,
            })?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        Err(match classify_failure(status, &headers, &body) {
            Failure::Retry { error, .. } | Failure::Final(error) => error,
        })
    }

    #[tracing::instrument(name = "sms.lookup", skip_all, fields(provider = "twilio", to = %mask_phone(query.to)))]
    async fn find_sent(&self, query: &SentQuery<'_>) -> Result<Lookup, SmsError> {
        let found = self.find(query).await;
        match &found {
            Ok(Lookup::Found {
                provider_id,
                status,
                ..
            }) => {
                tracing::info!(%provider_id, %status, "sms lookup found the message");
            }
            Ok(_) => tracing::info!("sms lookup found no such message"),
            Err(error) => tracing::warn!(%error, "sms lookup failed"),
        }
        found
    }
}

/// The part of Twilio's message resource we keep. `num_segments` is a string in Twilio's JSON.
#[derive(Deserialize)]
struct MessageResource {
    #[serde(default)]
    sid: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    num_segments: Option<serde_json::Value>,
}

fn read_message(body: &str) -> Option<SentSms> {
    let message: MessageResource = serde_json::from_str(body).ok()?;
    let sid = message.sid.filter(|s| !s.trim().is_empty())?;
    let segments = match message.num_segments {
        Some(serde_json::Value::String(s)) => s.trim().parse::<u32>().ok(),
        Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    }
    // Zero means "not counted yet" (a Messaging Service picks the sender later).
    .filter(|n| *n > 0);
    Some(SentSms {
        provider_id: sid,
        // Twilio always sends one; `queued` is its initial state for a direct send, and the
        // stage the message is at whatever word it used (its reports name the next ones).
        status: message
            .status
            .as_deref()
            .and_then(MessageStatus::reported)
            .unwrap_or(MessageStatus::Queued),
        segments,
    })
}

/// A failed connection sent nothing and is retried. Any other transport failure (a timeout
/// above all) came after the request left: Twilio may have queued the message, and it has no
/// idempotency key, so another attempt could text the customer twice. Those are returned for
/// the caller to reconcile (status callback or a lookup) before it sends again.
fn transport_failure(error: reqwest::Error) -> Failure<SmsError> {
    // The URL is left out: it names the account.
    let error = error.without_url();
    if error.is_connect() {
        return Failure::Retry {
            error: SmsError::Transient {
                status: None,
                code: None,
                message: scrub(format!("could not connect: {}", error_chain(&error))),
                may_have_been_sent: false,
            },
            retry_after: None,
        };
    }
    maybe_sent(None, &error)
}

fn maybe_sent(status: Option<u16>, error: &reqwest::Error) -> Failure<SmsError> {
    let what = if error.is_timeout() {
        "timed out"
    } else {
        "transport error"
    };
    Failure::Final(SmsError::Transient {
        status,
        code: None,
        message: scrub(format!(
            "{what} after the request was sent; the message may have been sent: {}",
            error_chain(error)
        )),
        may_have_been_sent: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_resources_are_read_leniently() {
        let sent =
            read_message(r#"{"sid":"SM0123","status":"queued","num_segments":"2"}"#).unwrap();
        assert_eq!(
            (sent.provider_id.as_str(), sent.status, sent.segments),
            ("SM0123", MessageStatus::Queued, Some(2))
        );
        let service =
            read_message(r#"{"sid":"SM1","status":"accepted","num_segments":"0"}"#).unwrap();
        assert_eq!(service.segments, None);
        assert_eq!(service.status, MessageStatus::Accepted);
        assert_eq!(
            read_message(r#"{"sid":"SM1","num_segments":3}"#)
                .unwrap()
                .segments,
            Some(3)
        );
        assert!(read_message(r#"{"status":"queued"}"#).is_none());
        assert!(read_message("<html>").is_none());
    }
}
