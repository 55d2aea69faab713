//! The x402 gate: the challenge (both encodings), local verification of a payment header, and
//! settlement through a facilitator.

pub mod cdp;
pub mod chain;
pub mod challenge;
mod eip3009;
pub mod facilitator;
pub mod payload;
pub mod payment;
pub mod rejection;
pub mod settle;
pub mod signature;
pub mod smart_wallet;
