//! What Twilio sends us: the message resource a create answers with, and the form posts of
//! status callbacks and inbound messages, signed with `X-Twilio-Signature`.

use super::{ACCOUNT_SID, FROM};
use serde_json::{Value, json};

/// A fresh message sid: `SM` and 32 hex digits.
pub fn message_sid() -> String {
    format!("SM{:032x}", rand::random::<u128>())
}

/// The `X-Twilio-Signature` Twilio would send for a POST of `params` to `url` (the public URL
/// as configured in Twilio, query string included).
pub fn sign_webhook(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    grove_common::twilio::signature(auth_token, url, params)
}

/// Segments as Twilio bills them, roughly: GSM-7 (here: ASCII) fits 160 characters in one
/// segment and 153 per part when split; anything else is UCS-2, 70 and 67.
fn segments(body: &str) -> usize {
    let chars = body.chars().count();
    let (single, part) = if body.is_ascii() {
        (160, 153)
    } else {
        (70, 67)
    };
    if chars <= single {
        1
    } else {
        chars.div_ceil(part)
    }
}

/// Twilio's message resource as a create answers it (RFC 2822 dates, counts as strings). From
/// a Messaging Service the sender is not picked yet: no `from`, status `accepted`, 0 segments.
pub(super) fn message_resource(
    account_sid: &str,
    to: &str,
    from: Option<&str>,
    service: Option<&str>,
    body: &str,
) -> Value {
    let sid = message_sid();
    let now = chrono::Utc::now().to_rfc2822();
    let (status, segments) = match service {
        Some(_) => ("accepted", "0".to_owned()),
        None => ("queued", segments(body).to_string()),
    };
    let uri = format!("/2010-04-01/Accounts/{account_sid}/Messages/{sid}");
    json!({
        "account_sid": account_sid,
        "api_version": "2010-04-01",
        "body": body,
        "date_created": now,
        "date_sent": null,
        "date_updated": now,
        "direction": "outbound-api",
        "error_code": null,
        "error_message": null,
        "from": from,
        "messaging_service_sid": service,
        "num_media": "0",
        "num_segments": segments,
        "price": null,
        "price_unit": "USD",
        "sid": sid,
        "status": status,
        "subresource_uris": {"media": format!("{uri}/Media.json")},
        "to": to,
        "uri": format!("{uri}.json"),
    })
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A status callback (sms.md 1.5): what Twilio posts to `StatusCallback` when a message moves.
#[derive(Clone, Debug)]
pub struct StatusCallback {
    pub message_sid: String,
    pub status: String,
    pub to: String,
    pub from: String,
    pub account_sid: String,
    pub error_code: Option<u32>,
    pub messaging_service_sid: Option<String>,
}

impl StatusCallback {
    /// A callback for a message sent from [`FROM`] on [`ACCOUNT_SID`].
    pub fn new(message_sid: &str, to: &str, status: &str) -> Self {
        Self {
            message_sid: message_sid.into(),
            status: status.into(),
            to: to.into(),
            from: FROM.into(),
            account_sid: ACCOUNT_SID.into(),
            error_code: None,
            messaging_service_sid: None,
        }
    }

    pub fn error_code(mut self, code: u32) -> Self {
        self.error_code = Some(code);
        self
    }

    pub fn messaging_service(mut self, sid: &str) -> Self {
        self.messaging_service_sid = Some(sid.into());
        self
    }

    /// The form fields, legacy aliases included; `RawDlrDoneDate` (`YYMMDDhhmm`, no zone)
    /// only on `delivered` and `undelivered`, as Twilio sends it.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut params = pairs(&[
            ("SmsSid", &self.message_sid),
            ("SmsStatus", &self.status),
            ("MessageStatus", &self.status),
            ("To", &self.to),
            ("MessageSid", &self.message_sid),
            ("AccountSid", &self.account_sid),
            ("From", &self.from),
            ("ApiVersion", "2010-04-01"),
        ]);
        if let Some(service) = &self.messaging_service_sid {
            params.push(("MessagingServiceSid".into(), service.clone()));
        }
        if let Some(code) = self.error_code {
            params.push(("ErrorCode".into(), code.to_string()));
        }
        if matches!(self.status.as_str(), "delivered" | "undelivered") {
            let done = chrono::Utc::now().format("%y%m%d%H%M").to_string();
            params.push(("RawDlrDoneDate".into(), done));
        }
        params
    }
}

/// An inbound message (sms.md 2.1): what Twilio posts when a customer texts our number.
#[derive(Clone, Debug)]
pub struct InboundSms {
    pub message_sid: String,
    /// The customer.
    pub from: String,
    /// Our number.
    pub to: String,
    pub body: String,
    pub account_sid: String,
    pub messaging_service_sid: Option<String>,
    /// `STOP`, `START` or `HELP`: sent only with Advanced Opt-Out on a Messaging Service.
    pub opt_out_type: Option<String>,
}

impl InboundSms {
    /// `from` (the customer) texted `body` to [`FROM`].
    pub fn new(from: &str, body: &str) -> Self {
        Self {
            message_sid: message_sid(),
            from: from.into(),
            to: FROM.into(),
            body: body.into(),
            account_sid: ACCOUNT_SID.into(),
            messaging_service_sid: None,
            opt_out_type: None,
        }
    }

    pub fn messaging_service(mut self, sid: &str) -> Self {
        self.messaging_service_sid = Some(sid.into());
        self
    }

    pub fn opt_out_type(mut self, kind: &str) -> Self {
        self.opt_out_type = Some(kind.into());
        self
    }

    /// The form fields, legacy aliases and (empty when unknown) geo hints included.
    pub fn params(&self) -> Vec<(String, String)> {
        let sid = self.message_sid.as_str();
        let mut params = pairs(&[
            ("ToCountry", "US"),
            ("ToState", ""),
            ("SmsMessageSid", sid),
            ("NumMedia", "0"),
            ("ToCity", ""),
            ("FromZip", ""),
            ("SmsSid", sid),
            ("FromState", ""),
            ("SmsStatus", "received"),
            ("FromCity", ""),
            ("Body", &self.body),
            ("FromCountry", "US"),
            ("To", &self.to),
            ("ToZip", ""),
            ("NumSegments", &segments(&self.body).to_string()),
            ("MessageSid", sid),
            ("AccountSid", &self.account_sid),
            ("From", &self.from),
            ("ApiVersion", "2010-04-01"),
        ]);
        if let Some(service) = &self.messaging_service_sid {
            params.push(("MessagingServiceSid".into(), service.clone()));
        }
        if let Some(kind) = &self.opt_out_type {
            params.push(("OptOutType".into(), kind.clone()));
        }
        params
    }
}
