//! Smart-wallet payers (docs/smart-wallets.md): a payment whose signature is not an EOA's
//! (`signature::Signed::ByWallet`) is the payer's wallet's to vouch for, on chain.
//!
//! - ERC-1271: a deployed wallet answers `isValidSignature(digest, signature)` with `0x1626ba7e`.
//! - ERC-6492: a wallet not deployed yet is deployed by its factory call and asked then, both
//!   simulated in one `eth_call`.
//!
//! An EOA's payment makes no request. Nothing here compares secrets: digests, signatures,
//! addresses and the magic value are public.

use super::{
    payload::PaymentPayload,
    payment::{self, Expected, VerifiedPayment},
    rejection::PaymentRejection,
    signature::{Signed, WalletSignature},
};
use alloy_primitives::hex;
use async_trait::async_trait;

/// What `isValidSignature` returns for a signature the wallet accepts (its own selector).
pub const ERC1271_MAGIC: [u8; 4] = hex!("1626ba7e");

/// What the chain said about a `WalletSignature`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalletAnswer {
    /// `isValidSignature` answered the magic value (after the deployment, for ERC-6492).
    Valid,
    /// The wallet answered something else, or reverted.
    Invalid,
    /// Nothing answered: no code at the payer (after the deployment, for ERC-6492).
    NoWallet,
}

/// Asks the payer's wallet on chain (`BASE_RPC_URL`). `Err` is "could not tell": the RPC failed
/// or answered something we cannot read, which is never the payer's fault.
#[async_trait]
pub trait WalletVerifier: Send + Sync {
    async fn ask(&self, signature: &WalletSignature) -> Result<WalletAnswer, String>;
}

/// Why a payment could not be verified: refused (the payer's doing, a 402), or the chain could
/// not be asked (ours, a 503: the same payment stays good for a retry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalletCheckError {
    Rejected(PaymentRejection),
    Unavailable(String),
}

impl From<PaymentRejection> for WalletCheckError {
    fn from(rejection: PaymentRejection) -> Self {
        Self::Rejected(rejection)
    }
}

/// Verifies a payment, asking the payer's wallet on chain when its signature is not an EOA's
/// (`wallets`: the chain, when `BASE_RPC_URL` is set). An EOA's payment makes no request.
pub async fn verify_payload(
    presented: PaymentPayload,
    expected: &Expected,
    now_unix: u64,
    wallets: Option<&dyn WalletVerifier>,
) -> Result<VerifiedPayment, WalletCheckError> {
    let (payment, signed) = payment::check(presented, expected, now_unix)?;
    let (
        Signed::ByWallet {
            signature,
            if_no_wallet,
        },
        Some(wallets),
    ) = (&signed, wallets)
    else {
        signed.without_chain()?;
        return Ok(payment);
    };
    let answer = wallets
        .ask(signature)
        .await
        .map_err(WalletCheckError::Unavailable)?;
    tracing::info!(payer = %signature.wallet, counterfactual = signature.deployment.is_some(),
        ?answer, "x402.smart_wallet checked");
    match (answer, if_no_wallet) {
        (WalletAnswer::Valid, _) => Ok(payment),
        (WalletAnswer::Invalid, _) => {
            Err(PaymentRejection::SmartWalletRefused(expected.network).into())
        }
        (WalletAnswer::NoWallet, Some(refusal)) => Err(refusal.clone().into()),
        (WalletAnswer::NoWallet, None) => Err(PaymentRejection::SmartWalletNotDeployed.into()),
    }
}
