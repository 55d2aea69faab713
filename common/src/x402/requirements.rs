//! The 402 challenge in both encodings: v2 `PaymentRequired` (header) and v1 body.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// v2 `PaymentRequirements` for the exact scheme on EVM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirementsV2 {
    pub scheme: String,
    pub network: String,
    /// Atomic units, decimal string.
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    pub extra: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub url: String,
    pub description: String,
    pub mime_type: String,
}

/// v2 `PaymentRequired`, sent base64-encoded in the `PAYMENT-REQUIRED` header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequiredV2 {
    pub x402_version: u8,
    pub error: String,
    pub resource: ResourceInfo,
    pub accepts: Vec<PaymentRequirementsV2>,
    pub extensions: Value,
}

/// v1 `PaymentRequirements` (inside the 402 body).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirementsV1 {
    pub scheme: String,
    pub network: String,
    pub max_amount_required: String,
    pub resource: String,
    pub description: String,
    pub mime_type: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    pub asset: String,
    pub extra: Value,
    pub output_schema: Value,
}

/// v1 `PaymentRequirementsResponse`, the JSON body of every 402 we send.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirementsResponseV1 {
    pub x402_version: u8,
    pub error: String,
    pub accepts: Vec<PaymentRequirementsV1>,
}
