//! Settlement behind a trait: an HTTP client for a real x402 facilitator, and the development
//! default that settles nothing (CONTRACT 3, "Facilitator").
//!
//! Only `/settle` is called: verification is local (`payment::verify`) and settling is the only
//! step that moves money. Facilitators disagree on status codes (TS answers 200 with
//! `success:false`, x402-rs answers 400/412 with the same body), so the body decides, not the
//! status; their reason strings are opaque and passed on as they are.

mod http;
mod probe;

pub use http::{FacilitatorTransport, HttpFacilitator};

use async_trait::async_trait;
use grove_common::config::Network;
use grove_common::x402::{PaymentRequirementsV1, PaymentRequirementsV2};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The decoded payment, unchanged (`VerifiedPayment::payload`).
    pub payment_payload: Value,
    /// The requirement we offered, in the payment's version (`requirements_for`).
    pub payment_requirements: Value,
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

/// The refusal reason of a facilitator that refused our credentials (HTTP 401/403): nothing was
/// processed, and it is the operator's fault, not the payer's (`SettleOutcome::is_operator_fault`).
pub const FACILITATOR_UNAUTHORIZED: &str = "facilitator_unauthorized";

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
            Self::Unauthorized { .. } => FACILITATOR_UNAUTHORIZED,
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

/// Development default (no `X402_FACILITATOR_URL`): nothing is settled; the caller records
/// the payment as `unsettled`. Configuration refuses this in production.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFacilitator {
    /// The configured network, which its answers name.
    pub network: Network,
}

#[async_trait]
impl Facilitator for LocalFacilitator {
    async fn settle(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        let payer = request
            .payment_payload
            .pointer("/payload/authorization/from")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let network = if request.x402_version == 1 {
            self.network.v1_name()
        } else {
            self.network.caip2()
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
