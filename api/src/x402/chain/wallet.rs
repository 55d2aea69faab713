//! Smart-wallet payers on chain (docs/smart-wallets.md): asking a wallet whether it accepts a
//! signature (ERC-1271, after its ERC-6492 deployment when it has none yet), and the settlement
//! transaction for such a payer.
//!
//! A wallet that is not deployed yet is deployed in the settlement's own transaction: one call to
//! Multicall3's `aggregate3` runs the factory call (allowed to fail: someone may have deployed it
//! meanwhile, and the transfer tells) and then USDC's `transferWithAuthorization` (not allowed to
//! fail). Both happen or neither does, so no deployment is paid for a transfer that reverts, a
//! successful receipt means the money moved, and reconciliation follows one transaction as it
//! does for any payer. The simulation before sending runs the same two calls.

use super::{ChainError, Rpc, SelfSettler, authorization::Authorization};
use crate::x402::{
    settle::SettleOutcome,
    signature::{Deployment, WalletSignature},
    smart_wallet::{ERC1271_MAGIC, WalletAnswer, WalletVerifier},
};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, address};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use alloy_sol_types::{SolCall, sol};
use async_trait::async_trait;
use grove_common::config::{Network, Secret};

sol! {
    interface IErc1271 {
        function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4 magicValue);
    }

    /// Deployed at the same address on Base and most EVM chains.
    interface IMulticall3 {
        struct Call3 {
            address target;
            bool allowFailure;
            bytes callData;
        }
        struct Result {
            bool success;
            bytes returnData;
        }
        function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory returnData);
    }
}

/// Multicall3 on Base.
pub const MULTICALL3: Address = address!("0xcA11bde05977b3631167028862bE2a173976CA11");

/// Asks payers' wallets through `BASE_RPC_URL` (payment verification, in either settlement mode).
#[derive(Clone)]
pub struct ChainWallets {
    rpc: Rpc,
}

impl ChainWallets {
    /// No request is made until the first question.
    pub fn new(rpc_url: &Secret, network: Network) -> Result<Self, ChainError> {
        Ok(Self {
            rpc: Rpc::new(rpc_url, network)?,
        })
    }
}

#[async_trait]
impl WalletVerifier for ChainWallets {
    async fn ask(&self, signature: &WalletSignature) -> Result<WalletAnswer, String> {
        self.rpc.ask_wallet(signature).await
    }
}

impl Rpc {
    /// One `eth_call`: `isValidSignature` on the payer, after the ERC-6492 factory call if any.
    async fn ask_wallet(&self, s: &WalletSignature) -> Result<WalletAnswer, String> {
        let question = IErc1271::isValidSignatureCall {
            hash: s.digest,
            signature: s.signature.clone(),
        }
        .abi_encode();
        let Some(deployment) = &s.deployment else {
            let tx = TransactionRequest::default()
                .with_to(s.wallet)
                .with_input(question);
            return match self.provider.call(tx).latest().await {
                Ok(out) => Ok(answer(true, &out)),
                // The wallet reverted: a refusal, not a failure of the RPC.
                Err(e) if is_revert(&e) => Ok(WalletAnswer::Invalid),
                Err(e) => Err(self.describe(&e)),
            };
        };
        let results = self
            .aggregate(vec![
                deploy(deployment),
                IMulticall3::Call3 {
                    target: s.wallet,
                    allowFailure: true,
                    callData: question.into(),
                },
            ])
            .await?;
        let asked = results.get(1).ok_or("aggregate3 answered fewer results")?;
        Ok(answer(asked.success, &asked.returnData))
    }

    /// Simulates `calls` through Multicall3 at `latest`.
    async fn aggregate(
        &self,
        calls: Vec<IMulticall3::Call3>,
    ) -> Result<Vec<IMulticall3::Result>, String> {
        let tx = TransactionRequest::default()
            .with_to(MULTICALL3)
            .with_input(IMulticall3::aggregate3Call { calls }.abi_encode());
        let out = self
            .provider
            .call(tx)
            .latest()
            .await
            .map_err(|e| self.describe(&e))?;
        IMulticall3::aggregate3Call::abi_decode_returns(&out)
            .map_err(|e| format!("Multicall3 aggregate3 answered {out}: {e}"))
    }
}

/// An `isValidSignature` answer, read as FiatToken's `SignatureChecker` reads it (the first word
/// is the magic value, left-aligned); empty output from a successful call means no code answered.
fn answer(success: bool, out: &[u8]) -> WalletAnswer {
    let mut magic = [0u8; 32];
    magic[..4].copy_from_slice(&ERC1271_MAGIC);
    match out {
        [] if success => WalletAnswer::NoWallet,
        _ if success && out.get(..32) == Some(magic.as_slice()) => WalletAnswer::Valid,
        _ => WalletAnswer::Invalid,
    }
}

/// Whether an `eth_call` error is the callee's revert (an answer) rather than the RPC's failure.
fn is_revert(e: &alloy_provider::transport::TransportError) -> bool {
    e.as_error_resp().is_some_and(|p| {
        p.as_revert_data().is_some() || p.message.to_ascii_lowercase().contains("revert")
    })
}

/// The ERC-6492 factory call, allowed to fail (the wallet may exist by now).
fn deploy(deployment: &Deployment) -> IMulticall3::Call3 {
    IMulticall3::Call3 {
        target: deployment.factory,
        allowFailure: true,
        callData: deployment.calldata.clone(),
    }
}

impl SelfSettler {
    /// The settlement transaction (without `from`, nonce, gas and fees): USDC's
    /// `transferWithAuthorization`, through Multicall3 behind the factory call when the payer
    /// signed with ERC-6492 and has no code yet. `Err` is a definite outcome; nothing was sent.
    pub(super) async fn settlement_call(
        &self,
        auth: &Authorization,
    ) -> Result<TransactionRequest, SettleOutcome> {
        let usdc = || TransactionRequest::default().with_to(self.rpc.usdc());
        let Some(deployment) = auth.deployment() else {
            return Ok(usdc().with_input(auth.calldata()));
        };
        let code = self
            .rpc
            .provider
            .get_code_at(auth.from)
            .latest()
            .await
            .map_err(|e| self.unavailable(&e))?;
        if !code.is_empty() {
            return Ok(usdc().with_input(auth.calldata()));
        }
        let transfer = |allow_failure: bool| IMulticall3::Call3 {
            target: self.rpc.usdc(),
            allowFailure: allow_failure,
            callData: auth.calldata(),
        };
        // Simulated with the transfer allowed to fail, to read USDC's own revert reason
        // (aggregate3 would replace it with "Multicall3: call failed").
        let simulated = self
            .rpc
            .aggregate(vec![deploy(deployment), transfer(true)])
            .await;
        match simulated {
            Ok(results) => match results.get(1) {
                Some(r) if r.success => {}
                Some(r) => {
                    let text =
                        alloy_sol_types::decode_revert_reason(&r.returnData).unwrap_or_default();
                    return Err(SettleOutcome::Refused {
                        reason: super::authorization::refusal_reason(&text),
                    });
                }
                None => {
                    return Err(SettleOutcome::Refused {
                        reason: crate::x402::settle::SETTLER_UNAVAILABLE.into(),
                    });
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "x402.settle_self could not simulate a wallet's deployment");
                return Err(SettleOutcome::Refused {
                    reason: crate::x402::settle::SETTLER_UNAVAILABLE.into(),
                });
            }
        }
        tracing::info!(payer = %auth.from, factory = %deployment.factory,
            "x402.settle_self deploying the payer's wallet in the settlement transaction");
        let calls = vec![deploy(deployment), transfer(false)];
        Ok(TransactionRequest::default()
            .with_to(MULTICALL3)
            .with_input(IMulticall3::aggregate3Call { calls }.abi_encode()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_magic_value_in_a_word_from_a_successful_call_is_valid() {
        let word = |head: &[u8]| {
            let mut w = [0u8; 32];
            w[..head.len()].copy_from_slice(head);
            w
        };
        assert_eq!(answer(true, &word(&ERC1271_MAGIC)), WalletAnswer::Valid);
        assert_eq!(answer(false, &word(&ERC1271_MAGIC)), WalletAnswer::Invalid);
        assert_eq!(answer(true, &ERC1271_MAGIC), WalletAnswer::Invalid);
        assert_eq!(answer(true, &word(&[0xff; 4])), WalletAnswer::Invalid);
        let mut dirty = word(&ERC1271_MAGIC);
        dirty[31] = 1;
        assert_eq!(answer(true, &dirty), WalletAnswer::Invalid);
        assert_eq!(answer(true, &[]), WalletAnswer::NoWallet);
        assert_eq!(answer(false, &[]), WalletAnswer::Invalid);
    }
}
