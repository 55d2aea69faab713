//! USDC on the configured network (Base, or Base Sepolia to try) over JSON-RPC: reading an authorization's state (`ChainReader`) and settling a
//! payment ourselves (`SelfSettler`, `X402_SETTLEMENT=self`), as a facilitator would (x402 notes
//! §7.3): simulate `transferWithAuthorization`, send it from the settler key, wait for the receipt.
//!
//! Sending twice can never move money twice: USDC marks the authorization's nonce used, so a
//! second transaction with the same authorization reverts. That is what makes it safe to resend
//! after a nonce collision and to call any doubt "unknown" rather than guess.

mod authorization;
mod facts;
mod fees;
pub(crate) use facts::rpc_fix;
mod follow;
mod lookup;
mod node_answer;
mod nonce;
mod rpc;
mod send;
mod versions;
// Smart-wallet payers: ERC-1271 / ERC-6492 checks, and deploying the payer's wallet (issue 25).
mod wallet;

use super::facilitator::SettleRequest;
use super::settle::{SentTransaction, SettleOutcome, Settler};
use alloy_network::EthereumWallet;
use alloy_primitives::{Address, TxHash};
use alloy_provider::Provider;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::sol;
use async_trait::async_trait;
use authorization::Authorization;
use grove_common::config::{Network, Secret, SettlementConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::{sync::Mutex, time::Instant};

pub use lookup::{EXPIRY_MARGIN_S, Finality};
pub use nonce::{HeldNonce, LocalNonces, NonceStore};
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
    /// The problem and its fix, one line (`facts::ChainFacts::not_on`, `facts::rpc_fix`).
    #[error("BASE_RPC_URL {0}")]
    NotOurChain(String),
}

/// How our own settlement sends and waits (docs/settlement.md).
#[derive(Clone, Debug)]
pub struct SettlerOptions {
    /// Bounds one settlement, receipt included (`X402_SETTLE_TIMEOUT_S`).
    pub timeout: Duration,
    /// The highest `maxFeePerGas` signed, in wei (`SETTLER_MAX_FEE_GWEI`).
    pub max_fee_wei: u128,
    /// A transaction pending this long is replaced (`SETTLER_REPLACE_AFTER_S`).
    pub replace_after: Duration,
    /// Blocks a receipt must be deep, its own included (`SETTLEMENT_CONFIRMATIONS`).
    pub confirmations: u64,
}

impl From<&SettlementConfig> for SettlerOptions {
    fn from(c: &SettlementConfig) -> Self {
        Self {
            timeout: c.timeout,
            max_fee_wei: c.max_fee_wei,
            replace_after: c.replace_after,
            confirmations: c.confirmations,
        }
    }
}

/// Settles payments by sending `transferWithAuthorization` from the settler key.
pub struct SelfSettler {
    rpc: Rpc,
    wallet: EthereumWallet,
    settler: Address,
    chain_id: u64,
    options: SettlerOptions,
    /// The settler key's next transaction nonce, held across each send (`nonce`).
    nonces: Arc<dyn NonceStore>,
    /// One send at a time in this process (then one at a time across processes: `nonces`).
    sending: Mutex<()>,
    /// When reconciliation first saw each pending transaction (`follow`).
    pending_since: std::sync::Mutex<HashMap<TxHash, Instant>>,
}

impl SelfSettler {
    /// Reconciliation's reads, through the settler's own connection (at its finality).
    pub fn reader(&self) -> ChainReader {
        ChainReader {
            rpc: self.rpc.clone(),
        }
    }

    /// Connects and checks that the endpoint serves `network` (chain 8453 for Base, 84532 for
    /// Base Sepolia). The nonce counter is this process's own until `with_nonces` shares it.
    pub async fn connect(
        rpc_url: &Secret,
        private_key: &Secret,
        options: SettlerOptions,
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
            options,
            nonces: Arc::new(LocalNonces::default()),
            sending: Mutex::new(()),
            pending_since: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Reads (reconciliation, reverts) at `finality` rather than the defaults.
    pub fn with_finality(mut self, finality: Finality) -> Self {
        self.rpc.finality = finality;
        self
    }

    /// Keeps the settler key's nonce counter in `store` (shared by `api` replicas).
    pub fn with_nonces(mut self, store: Arc<dyn NonceStore>) -> Self {
        self.nonces = store;
        self
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
