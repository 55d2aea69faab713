//! x402 wire types and constants ("exact" scheme), kept apart from transport. The network, USDC's
//! address and its EIP-712 domain are the configured `config::Network`'s.
//!
//! v2 is the primary protocol (`PAYMENT-REQUIRED` / `PAYMENT-SIGNATURE` / `PAYMENT-RESPONSE`);
//! v1 (`X-PAYMENT` / `X-PAYMENT-RESPONSE`, requirements in the 402 body) is served beside it.

mod requirements;

pub use requirements::{
    PaymentRequiredV2, PaymentRequirementsResponseV1, PaymentRequirementsV1, PaymentRequirementsV2,
    ResourceInfo,
};

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
