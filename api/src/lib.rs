//! Grove's HTTP API: the free surfaces, request validation, the sandbox and the x402 gate. A
//! library only: the `api` binary is the `grove` package's, which composes it with a back end.

mod admin;
mod app;
pub mod doctor;
mod error;
mod extract;
mod http_metrics;
mod limits;
mod mcp;
mod metrics;
mod paid;
mod products;
mod rate_limit;
mod render;
mod request_id;
mod review;
mod routes;
mod state;
mod validate;
mod x402;

pub use app::{Application, BackEnd, Foundation, StartError};
pub use error::ApiError;
pub use x402::cdp::CdpSigner;
pub use x402::chain::{
    ChainError, ChainReader, ChainWallets, EXPIRY_MARGIN_S, Finality, HeldNonce, IUsdc,
    LocalNonces, MULTICALL3, NonceStore, SelfSettler, SettlerOptions,
};
pub use x402::facilitator::{
    Facilitator, FacilitatorError, FacilitatorTransport, HttpFacilitator, LocalFacilitator,
    SettleRequest, SettleResponse, requirements_for,
};
pub use x402::payload::PaymentPayload;
pub use x402::payment::{Expected, VerifiedPayment, verify, verify_payload};
pub use x402::rejection::PaymentRejection;
pub use x402::settle::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, SETTLER_UNAVAILABLE,
    SentTransaction, SettleOutcome, Settler, TransferStanding, not_sent,
};
pub use x402::signature::{Deployment, ERC6492_SUFFIX, WalletSignature};
pub use x402::smart_wallet::{WalletAnswer, WalletCheckError, WalletVerifier};

/// What a future holds while it waits, by the function that makes it (issue 31): each waiting
/// call holds the handler's and the listener's layers' futures.
#[cfg(test)]
mod future_size {
    pub fn of3<A, B, C, F: Future>(_: impl FnOnce(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    pub fn of4<A, B, C, D, F: Future>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }
}
