//! USDC on the configured network (Base, or Base Sepolia to try) over JSON-RPC: reading an authorization's state (`ChainReader`) and settling a
//! payment ourselves (`SelfSettler`, `X402_SETTLEMENT=self`), as a facilitator would (x402 notes
//! §7.3): simulate `transferWithAuthorization`, send it from the settler key, wait for the receipt.
//!
//! Sending twice can never move money twice: USDC marks the authorization's nonce used, so a
//! second transaction with the same authorization reverts. That is what makes it safe to resend
//! after a nonce collision and to call any doubt "unknown" rather than guess.

mod authorization;
mod facts;
mod follow;
mod lookup;
mod rpc;
mod send;
// Smart-wallet payers: ERC-1271 / ERC-6492 checks, and deploying the payer's wallet (issue 25).
mod wallet;

use super::facilitator::SettleRequest;
use super::settle::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, SentTransaction, SettleOutcome,
    Settler,
};
use alloy_network::EthereumWallet;
use alloy_primitives::{Address, B256};
use alloy_provider::Provider;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::sol;
use async_trait::async_trait;
use authorization::Authorization;
use grove_common::config::{Network, Secret};
use std::time::Duration;
use tokio::sync::Mutex;

pub use rpc::ChainReader;
use rpc::Rpc;
pub use wallet::{ChainWallets, MULTICALL3};

sol! {
    /// The part of USDC (FiatToken v2) that settlement uses.
    interface IUsdc {
        // EIP-3009: the transfer, its validity window and nonce, and the payer's signature.
        function transferWithAuthorization(
            address from, address to, uint256 value,
            uint256 validAfter, uint256 validBefore, bytes32 nonce,
            uint8 v, bytes32 r, bytes32 s
        ) external;
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
        function balanceOf(address account) external view returns (uint256);
        event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
        event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);
        event Transfer(address indexed from, address indexed to, uint256 value);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("BASE_RPC_URL: not a valid URL")]
    RpcUrl,
    #[error("SETTLER_PRIVATE_KEY: not a valid secp256k1 private key")]
    PrivateKey,
    #[error("BASE_RPC_URL: {0}")]
    Rpc(String),
    #[error("BASE_RPC_URL serves chain {got}, not {} ({})", .expected.display_name(), .expected.chain_id())]
    WrongChain { expected: Network, got: u64 },
}

/// Settles payments by sending `transferWithAuthorization` from the settler key.
pub struct SelfSettler {
    rpc: Rpc,
    wallet: EthereumWallet,
    settler: Address,
    chain_id: u64,
    timeout: Duration,
    /// The settler key's next transaction nonce; `None` means "ask the chain". Held across the
    /// send, so concurrent settlements take consecutive nonces and none is skipped or reused.
    next_nonce: Mutex<Option<u64>>,
}

impl SelfSettler {
    /// Connects and checks that the endpoint serves `network` (chain 8453 for Base, 84532 for
    /// Base Sepolia). `timeout` bounds one settlement, receipt included (`X402_SETTLE_TIMEOUT_S`).
    pub async fn connect(
        rpc_url: &Secret,
        private_key: &Secret,
        timeout: Duration,
        network: Network,
    ) -> Result<Self, ChainError> {
        let signer: PrivateKeySigner = private_key
            .expose()
            .parse()
            .map_err(|_| ChainError::PrivateKey)?;
        let rpc = Rpc::new(rpc_url, network)?;
        let chain_id = rpc
            .provider
            .get_chain_id()
            .await
            .map_err(|e| ChainError::Rpc(rpc.describe(&e)))?;
        if chain_id != network.chain_id() {
            return Err(ChainError::WrongChain {
                expected: network,
                got: chain_id,
            });
        }
        Ok(Self {
            settler: signer.address(),
            wallet: EthereumWallet::from(signer),
            rpc,
            chain_id,
            timeout,
            next_nonce: Mutex::new(None),
        })
    }

    /// The address that sends settlements and pays their gas.
    pub fn address(&self) -> Address {
        self.settler
    }
}

#[async_trait]
impl Settler for SelfSettler {
    async fn settle(&self, request: &SettleRequest) -> SettleOutcome {
        match Authorization::from_request(request, self.rpc.network) {
            Ok(auth) => self.settle_authorization(&auth).await,
            Err(reason) => SettleOutcome::Refused {
                reason: reason.into(),
            },
        }
    }

    async fn settle_again(
        &self,
        request: &SettleRequest,
        sent: Option<&SentTransaction>,
    ) -> SettleOutcome {
        let auth = match Authorization::from_request(request, self.rpc.network) {
            Ok(auth) => auth,
            Err(reason) => {
                return SettleOutcome::Refused {
                    reason: reason.into(),
                };
            }
        };
        if let Some(sent) = sent
            && let Some(outcome) = self.follow(sent, &auth).await
        {
            return outcome;
        }
        self.settle_authorization(&auth).await
    }
}

/// Reconciliation reads through the settler's own connection.
#[async_trait]
impl AuthorizationReader for SelfSettler {
    async fn authorization_used(&self, authorizer: Address, nonce: B256) -> Result<bool, String> {
        self.rpc.authorization_used(authorizer, nonce).await
    }
    async fn authorization(
        &self,
        query: &AuthorizationQuery,
    ) -> Result<AuthorizationState, String> {
        self.rpc.authorization(query).await
    }
}
