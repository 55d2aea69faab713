//! Settlement behind a trait: an HTTP client for a real x402 facilitator, and the development
//! default that settles nothing (CONTRACT 3, "Facilitator").
//!
//! Only `/settle` is called: verification is local (`payment::verify`) and settling is the only
//! step that moves money. Facilitators disagree on status codes (TS answers 200 with
//! `success:false`, x402-rs answers 400/412 with the same body), so the body decides, not the
//! status; their reason strings are opaque and passed on as they are.

use super::{cdp::CdpSigner, payment::VerifiedPayment};
use async_trait::async_trait;
use grove_common::{
    config::Secret,
    x402::{self, PaymentRequirementsV1, PaymentRequirementsV2},
};
use reqwest::{
    StatusCode,
    header::{AUTHORIZATION, HeaderValue},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::{fmt, time::Duration};
use tracing::Instrument;

#[async_trait]
pub trait Facilitator: Send + Sync {
    /// Settles one payment. `Ok` with `success == false` is a refusal (no money moved);
    /// `Err` means the outcome is unknown (see `FacilitatorError`).
    async fn settle(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError>;
}

/// The `/settle` body: `{x402Version, paymentPayload, paymentRequirements}`. Stored with the
/// payment (hence `Deserialize`) so that reconciliation re-posts exactly this.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleRequest {
    pub x402_version: u8,
    /// The decoded payment header, unchanged (`VerifiedPayment::payload`).
    pub payment_payload: Value,
    /// The requirement we offered, in the payment's version (`requirements_for`).
    pub payment_requirements: Value,
}

impl SettleRequest {
    /// The request for a locally verified payment: its own payload, in its own version.
    pub fn for_payment(payment: &VerifiedPayment, payment_requirements: Value) -> Self {
        Self {
            x402_version: payment.version,
            payment_payload: payment.payload.clone(),
            payment_requirements,
        }
    }
}

/// The facilitator's answer (x402 `SettlementResponse`). Missing strings default to empty
/// because failure bodies in the wild omit them (x402-rs#119).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(default)]
    pub transaction: String,
    #[serde(default)]
    pub network: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// The settlement outcome is unknown: it may or may not have happened (a timeout in particular
/// can hide a transfer that lands later), so a caller must not treat these as "not paid" — except
/// `Unauthorized`, a refusal of our credentials before anything was processed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FacilitatorError {
    /// HTTP 401/403: the facilitator refused our credentials (`CDP_API_KEY_ID`/`CDP_API_KEY_SECRET`
    /// or `X402_FACILITATOR_AUTH`) and processed nothing.
    #[error("the facilitator refused our credentials (HTTP {status})")]
    Unauthorized { status: u16 },
    #[error("the facilitator did not answer in time")]
    Timeout,
    #[error("could not reach the facilitator: {0}")]
    Transport(String),
    #[error("the facilitator answered HTTP {status}: {body_excerpt}")]
    Status { status: u16, body_excerpt: String },
    #[error("the facilitator's answer could not be read: {0}")]
    Decode(String),
}

impl FacilitatorError {
    /// A stable code for `settlement_failed:<reason>` and for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unauthorized { .. } => super::settle::FACILITATOR_UNAUTHORIZED,
            Self::Timeout => "facilitator_timeout",
            Self::Transport(_) => "facilitator_unreachable",
            Self::Status { .. } => "facilitator_error",
            Self::Decode(_) => "facilitator_bad_response",
        }
    }
}

/// The exact requirement we offered, in the shape the facilitator expects for `version`:
/// v2 the bare `PaymentRequirements`, v1 the entry with `resource`, `description`, `mimeType`.
pub fn requirements_for(
    version: u8,
    offered_v2: &PaymentRequirementsV2,
    offered_v1: &PaymentRequirementsV1,
) -> Value {
    let value = if version == 1 {
        serde_json::to_value(offered_v1)
    } else {
        serde_json::to_value(offered_v2)
    };
    // Plain structs of strings and numbers always serialise; Null would be refused downstream.
    value.unwrap_or(Value::Null)
}

/// Bodies past this are cut in error messages: enough to diagnose, too little to flood logs.
const EXCERPT_CHARS: usize = 200;

/// `POST {base}/settle` over HTTPS with an explicit timeout and an optional auth header.
pub struct HttpFacilitator {
    settle_url: String,
    auth: Auth,
    client: reqwest::Client,
}

/// Where each request's `Authorization` header comes from.
enum Auth {
    None,
    /// `X402_FACILITATOR_AUTH`, sent as it is.
    Static(HeaderValue),
    /// A new CDP token per request; `uri` is the `uris` claim (`POST host/path` of `settle_url`).
    Cdp {
        signer: Box<CdpSigner>,
        uri: String,
    },
}

impl Auth {
    /// Which variables the credentials come from, for an error a person acts on.
    fn kind(&self) -> &'static str {
        match self {
            Auth::None => {
                "none configured (X402_FACILITATOR_AUTH or CDP_API_KEY_ID/CDP_API_KEY_SECRET)"
            }
            Auth::Static(_) => "X402_FACILITATOR_AUTH",
            Auth::Cdp { .. } => "CDP_API_KEY_ID/CDP_API_KEY_SECRET",
        }
    }
}

impl fmt::Debug for HttpFacilitator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            Auth::None => None,
            Auth::Static(_) => Some("***"),
            Auth::Cdp { .. } => Some("cdp token"),
        };
        f.debug_struct("HttpFacilitator")
            .field("settle_url", &self.settle_url)
            .field("auth", &auth)
            .finish()
    }
}

impl HttpFacilitator {
    /// `auth` is sent verbatim as the `Authorization` header (e.g. `Bearer …`).
    pub fn new(
        base_url: &str,
        auth: Option<Secret>,
        timeout: Duration,
    ) -> Result<Self, FacilitatorError> {
        let auth = auth
            .map(|secret| {
                let mut value = HeaderValue::from_str(secret.expose()).map_err(|_| {
                    // Never echo the secret, even when it is unusable.
                    FacilitatorError::Transport(
                        "X402_FACILITATOR_AUTH is not a valid header value".into(),
                    )
                })?;
                value.set_sensitive(true);
                Ok(value)
            })
            .transpose()?;
        Self::build(base_url, auth.map_or(Auth::None, Auth::Static), timeout)
    }

    /// Signs a new CDP token for every request (`CDP_API_KEY_ID`, `CDP_API_KEY_SECRET`).
    pub fn with_cdp(
        base_url: &str,
        signer: CdpSigner,
        timeout: Duration,
    ) -> Result<Self, FacilitatorError> {
        let settle_url = settle_url(base_url);
        let uri = reqwest::Url::parse(&settle_url)
            .ok()
            .and_then(|url| super::cdp::request_uri("POST", &url))
            .ok_or_else(|| {
                FacilitatorError::Transport("X402_FACILITATOR_URL is not an http(s) URL".into())
            })?;
        let signer = Box::new(signer);
        Self::build(base_url, Auth::Cdp { signer, uri }, timeout)
    }

    fn build(base_url: &str, auth: Auth, timeout: Duration) -> Result<Self, FacilitatorError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // A redirected POST turns into a GET; a moved facilitator is a configuration error.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| FacilitatorError::Transport(e.without_url().to_string()))?;
        Ok(Self {
            settle_url: settle_url(base_url),
            auth,
            client,
        })
    }
}

fn settle_url(base_url: &str) -> String {
    format!("{}/settle", base_url.trim_end_matches('/'))
}

#[async_trait]
impl Facilitator for HttpFacilitator {
    async fn settle(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        // The URL is not a span field: it may carry credentials in its userinfo.
        let span = tracing::info_span!("x402.settle", x402.version = request.x402_version);
        self.post(request).instrument(span).await
    }
}

impl HttpFacilitator {
    async fn post(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        let mut call = self.client.post(&self.settle_url).json(request);
        match &self.auth {
            Auth::None => {}
            Auth::Static(value) => call = call.header(AUTHORIZATION, value.clone()),
            Auth::Cdp { signer, uri } => {
                let value = signer.authorization(uri).map_err(|_| {
                    FacilitatorError::Transport("could not build the CDP token header".into())
                })?;
                call = call.header(AUTHORIZATION, value);
            }
        }
        let response = call.send().await.map_err(transport)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport)?;
        let parsed = serde_json::from_slice::<SettleResponse>(&body);
        let outcome = match status {
            StatusCode::OK => parsed.map_err(|e| FacilitatorError::Decode(e.to_string())),
            // 400 / 412 with a settle body are refusals; anything else at those codes
            // (a proxy's HTML page, a success flag) is not an answer we can trust.
            StatusCode::BAD_REQUEST | StatusCode::PRECONDITION_FAILED => match parsed {
                Ok(answer) if !answer.success => Ok(answer),
                _ => Err(status_error(status, &body)),
            },
            // Checked before anything is processed: nothing was settled.
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Err(FacilitatorError::Unauthorized {
                    status: status.as_u16(),
                })
            }
            _ => Err(status_error(status, &body)),
        };
        match &outcome {
            Ok(answer) => tracing::info!(
                http.status = status.as_u16(),
                success = answer.success,
                error_reason = answer.error_reason.as_deref().unwrap_or(""),
                transaction = %answer.transaction,
                "facilitator answered"
            ),
            // The operator's to fix; the credentials themselves are never logged.
            Err(error @ FacilitatorError::Unauthorized { .. }) => tracing::error!(
                %error,
                credentials = self.auth.kind(),
                "the facilitator refused our credentials; nothing was settled: check them"
            ),
            Err(error) => tracing::warn!(%error, "settlement outcome unknown"),
        }
        outcome
    }
}

fn transport(error: reqwest::Error) -> FacilitatorError {
    if error.is_timeout() {
        FacilitatorError::Timeout
    } else {
        // The URL may carry credentials in userinfo; the message does not need it.
        FacilitatorError::Transport(error.without_url().to_string())
    }
}

fn status_error(status: StatusCode, body: &[u8]) -> FacilitatorError {
    let text = String::from_utf8_lossy(body);
    FacilitatorError::Status {
        status: status.as_u16(),
        body_excerpt: text.chars().take(EXCERPT_CHARS).collect(),
    }
}

/// Development default (no `X402_FACILITATOR_URL`): nothing is settled; the caller records
/// the payment as `unsettled`. Configuration refuses this in production.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFacilitator;

#[async_trait]
impl Facilitator for LocalFacilitator {
    async fn settle(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        let payer = request
            .payment_payload
            .pointer("/payload/authorization/from")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let network = if request.x402_version == 1 {
            x402::NETWORK_V1
        } else {
            x402::NETWORK_V2
        };
        Ok(SettleResponse {
            success: true,
            error_reason: None,
            transaction: String::new(),
            network: network.to_owned(),
            payer,
        })
    }
}
