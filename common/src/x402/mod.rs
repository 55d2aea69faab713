//! x402 wire types and constants ("exact" scheme, USDC on Base mainnet), kept apart from transport.
//!
//! v2 is the primary protocol (`PAYMENT-REQUIRED` / `PAYMENT-SIGNATURE` / `PAYMENT-RESPONSE`);
//! v1 (`X-PAYMENT` / `X-PAYMENT-RESPONSE`, requirements in the 402 body) is served beside it.

mod requirements;

pub use requirements::{
    PaymentRequiredV2, PaymentRequirementsResponseV1, PaymentRequirementsV1, PaymentRequirementsV2,
    ResourceInfo,
};

/// CAIP-2 id of Base mainnet (v2).
pub const NETWORK_V2: &str = "eip155:8453";
/// The v1 name of Base mainnet.
pub const NETWORK_V1: &str = "base";
pub const CHAIN_ID: u64 = 8453;
/// USDC on Base mainnet.
pub const USDC_ADDRESS: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/// EIP-712 domain of USDC on Base: name is "USD Coin", not "USDC" (that is Base Sepolia's).
pub const USDC_DOMAIN_NAME: &str = "USD Coin";
pub const USDC_DOMAIN_VERSION: &str = "2";
pub const SCHEME_EXACT: &str = "exact";

/// Header names, as the transports spell them (HTTP header names are case-insensitive).
pub mod headers {
    pub const PAYMENT_REQUIRED: &str = "payment-required";
    pub const PAYMENT_SIGNATURE: &str = "payment-signature";
    pub const PAYMENT_RESPONSE: &str = "payment-response";
    pub const X_PAYMENT: &str = "x-payment";
    pub const X_PAYMENT_RESPONSE: &str = "x-payment-response";
}

/// How long a client may take between our challenge and its signed retry.
pub const MAX_TIMEOUT_SECONDS: u64 = 300;
