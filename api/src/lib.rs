//! Grove's HTTP API: the free surfaces, request validation, the sandbox and the x402 gate.

mod app;
mod error;
mod extract;
mod mcp;
mod metrics;
mod paid;
mod render;
mod request_id;
mod review;
mod routes;
mod state;
mod validate;
mod x402;

pub use app::{Application, StartError};
pub use error::ApiError;
pub use x402::cdp::CdpSigner;
pub use x402::chain::{ChainError, ChainReader, IUsdc, SelfSettler, USDC};
pub use x402::facilitator::{
    Facilitator, FacilitatorError, HttpFacilitator, LocalFacilitator, SettleRequest,
    SettleResponse, requirements_for,
};
pub use x402::payment::{Expected, PaymentRejection, VerifiedPayment, verify};
pub use x402::settle::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, SentTransaction, SettleOutcome,
    Settler,
};
