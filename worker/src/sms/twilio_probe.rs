//! What the doctor asks Twilio, reading only: the account (our credentials work and it is
//! active) and the sender (`TWILIO_FROM` is a number of this account that can send SMS, or the
//! Messaging Service exists and, for US traffic, carries a registered A2P 10DLC campaign).

use super::{RetryPolicy, TwilioProvider, twilio::basic_auth};
use grove_common::{
    config::TwilioConfig,
    doctor::{Check, bounded},
};
use reqwest::header::AUTHORIZATION;
use serde_json::Value;

const ACCOUNT: &str = "twilio account";
const SENDER: &str = "twilio sender";

/// Twilio's production host; a Messaging Service lives on its messaging host. Any other
/// `TWILIO_BASE_URL` (a proxy, the tests' loopback Twilio) serves both paths itself.
const API_HOST: &str = "https://api.twilio.com";
const MESSAGING_HOST: &str = "https://messaging.twilio.com";

pub async fn checks(config: &TwilioConfig) -> Vec<Check> {
    // The settings the sender refuses to start with fail here the same way.
    if let Err(e) = TwilioProvider::new(config, RetryPolicy::SMS) {
        return vec![Check::fail(
            ACCOUNT,
            e.to_string(),
            "correct the TWILIO_* settings",
        )];
    }
    let probe = match Probe::new(config) {
        Ok(p) => p,
        Err(problem) => {
            return vec![Check::fail(
                ACCOUNT,
                problem,
                "correct the TWILIO_* settings",
            )];
        }
    };
    let account = bounded(
        ACCOUNT,
        "check TWILIO_BASE_URL and the network",
        probe.account(),
    )
    .await;
    if account.failed() {
        return vec![account, Check::skip(SENDER, "the account check failed")];
    }
    let sender = bounded(SENDER, "check the sender settings", probe.sender(config)).await;
    vec![account, sender]
}

struct Probe {
    client: reqwest::Client,
    authorization: reqwest::header::HeaderValue,
    base: String,
    sid: String,
}

impl Probe {
    fn new(config: &TwilioConfig) -> Result<Self, String> {
        let authorization = basic_auth(config).map_err(|e| e.to_string())?;
        let client = grove_common::http_client::builder()
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Self {
            client,
            authorization,
            base: config.base_url.trim_end_matches('/').to_owned(),
            sid: config.account_sid.clone(),
        })
    }

    async fn get(&self, url: &str) -> Result<(u16, Value), String> {
        let response = self
            .client
            .get(url)
            .header(AUTHORIZATION, self.authorization.clone())
            .send()
            .await
            .map_err(|e| format!("cannot reach Twilio ({})", e.without_url()))?;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    async fn account(&self) -> Check {
        let url = format!("{}/2010-04-01/Accounts/{}.json", self.base, self.sid);
        let fix = "check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (Twilio console, Account Info)";
        match self.get(&url).await {
            Err(problem) => Check::fail(ACCOUNT, problem, "check TWILIO_BASE_URL and the network"),
            Ok((401 | 403, _)) => Check::fail(ACCOUNT, "Twilio refused our credentials", fix),
            Ok((404, _)) => Check::fail(ACCOUNT, "no such account", fix),
            Ok((200, body)) => match body.get("status").and_then(Value::as_str) {
                Some("active") => Check::pass(ACCOUNT, format!("account {} is active", self.sid)),
                Some(other) => Check::fail(
                    ACCOUNT,
                    format!("account {} is {other}", self.sid),
                    "reactivate the account in the Twilio console",
                ),
                None => Check::fail(ACCOUNT, "Twilio's answer has no account status", fix),
            },
            Ok((status, _)) => Check::fail(ACCOUNT, format!("Twilio answered HTTP {status}"), fix),
        }
    }

    async fn sender(&self, config: &TwilioConfig) -> Check {
        let service = config
            .messaging_service_sid
            .as_deref()
            .filter(|s| !s.trim().is_empty());
        match (service, config.from.as_deref()) {
            (Some(service), _) => self.messaging_service(service).await,
            (None, Some(from)) => self.number(from).await,
            (None, None) => Check::fail(
                SENDER,
                "no sender",
                "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID",
            ),
        }
    }

    async fn messaging_service(&self, service: &str) -> Check {
        let base = if self.base == API_HOST {
            MESSAGING_HOST
        } else {
            self.base.as_str()
        };
        let fix = "check TWILIO_MESSAGING_SERVICE_SID (Twilio console, Messaging, Services)";
        match self.get(&format!("{base}/v1/Services/{service}")).await {
            Err(problem) => Check::fail(SENDER, problem, fix),
            Ok((404, _)) => Check::fail(SENDER, format!("no Messaging Service {service}"), fix),
            Ok((200, body)) => {
                if body
                    .get("us_app_to_person_registered")
                    .and_then(Value::as_bool)
                    == Some(false)
                {
                    Check::fail(
                        SENDER,
                        format!(
                            "Messaging Service {service} has no registered A2P 10DLC campaign: US carriers block its texts"
                        ),
                        "register a brand and campaign for it (Twilio console, Regulatory Compliance), or send from a verified toll-free number",
                    )
                } else {
                    Check::pass(
                        SENDER,
                        format!("Messaging Service {service} exists, A2P 10DLC registered"),
                    )
                }
            }
            Ok((status, _)) => Check::fail(SENDER, format!("Twilio answered HTTP {status}"), fix),
        }
    }

    async fn number(&self, from: &str) -> Check {
        if !from.starts_with('+') {
            return Check::pass(
                SENDER,
                format!(
                    "alphanumeric sender {from:?} (not checkable; not allowed for US recipients)"
                ),
            );
        }
        let fix = "set TWILIO_FROM to an SMS-capable number of this account (E.164)";
        let url = format!(
            "{}/2010-04-01/Accounts/{}/IncomingPhoneNumbers.json?PhoneNumber={}",
            self.base,
            self.sid,
            from.replace('+', "%2B")
        );
        match self.get(&url).await {
            Err(problem) => Check::fail(SENDER, problem, fix),
            Ok((200, body)) => {
                let numbers = body.get("incoming_phone_numbers").and_then(Value::as_array);
                let Some(number) = numbers.and_then(|n| n.first()) else {
                    return Check::fail(
                        SENDER,
                        format!("{from} is not a number of this account"),
                        fix,
                    );
                };
                if number.pointer("/capabilities/sms").and_then(Value::as_bool) == Some(false) {
                    return Check::fail(SENDER, format!("{from} cannot send SMS"), fix);
                }
                Check::pass(
                    SENDER,
                    format!(
                        "{from} belongs to the account and sends SMS (US traffic needs A2P 10DLC or toll-free verification)"
                    ),
                )
            }
            Ok((status, _)) => Check::fail(SENDER, format!("Twilio answered HTTP {status}"), fix),
        }
    }
}
