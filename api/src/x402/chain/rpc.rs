//! The JSON-RPC connection to Base that reads and settles, with the URL (which may carry an API
//! key) kept out of every error, and the chain reader reconciliation uses without settling.

use super::{ChainError, IUsdc, lookup::Finality};
use crate::x402::settle::{
    AuthorizationQuery, AuthorizationReader, AuthorizationState, TransferStanding,
};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, B256};
use alloy_provider::transport::TransportError;
use alloy_provider::{Provider, ProviderBuilder, RootProvider};
use alloy_rpc_types_eth::TransactionRequest;
use alloy_sol_types::SolCall;
use async_trait::async_trait;
use grove_common::config::{Network, Secret};
use std::time::Duration;

/// One JSON-RPC request, so that a hung endpoint cannot hold a settlement past its deadline.
const RPC_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A JSON-RPC connection to the configured network, with the URL (which may carry an API key)
/// kept out of errors.
#[derive(Clone)]
pub(super) struct Rpc {
    pub(super) provider: RootProvider,
    /// The chain it must serve and whose USDC it reads.
    pub(super) network: Network,
    /// The URL as written and as `Url` prints it, to blank out of error text.
    redact: [String; 2],
    /// How deep decisions are read, and how fresh the head must be (`lookup`).
    pub(super) finality: Finality,
}

impl Rpc {
    pub(super) fn new(rpc_url: &Secret, network: Network) -> Result<Self, ChainError> {
        let url: reqwest::Url = rpc_url.expose().parse().map_err(|_| ChainError::RpcUrl)?;
        let client = grove_common::http_client::builder()
            .timeout(RPC_REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|_| ChainError::Rpc("could not build an HTTP client".into()))?;
        let redact = [rpc_url.expose().to_owned(), url.as_str().to_owned()];
        let provider = ProviderBuilder::new()
            .disable_recommended_fillers()
            .connect_reqwest(client, url);
        Ok(Self {
            provider,
            network,
            redact,
            finality: Finality::default(),
        })
    }

    /// USDC's contract on the configured network.
    pub(super) fn usdc(&self) -> Address {
        self.network.usdc()
    }

    /// An RPC error as text safe to log and to keep.
    pub(super) fn describe(&self, e: &TransportError) -> String {
        let mut text = e.to_string();
        for secret in &self.redact {
            text = text.replace(secret.as_str(), "<BASE_RPC_URL>");
        }
        text
    }

    pub(super) async fn authorization_used(
        &self,
        authorizer: Address,
        nonce: B256,
    ) -> Result<bool, String> {
        let call = IUsdc::authorizationStateCall { authorizer, nonce };
        let tx = TransactionRequest::default()
            .with_to(self.usdc())
            .with_input(call.abi_encode());
        let out = self
            .provider
            .call(tx)
            .latest()
            .await
            .map_err(|e| self.describe(&e))?;
        IUsdc::authorizationStateCall::abi_decode_returns(&out)
            .map_err(|e| format!("authorizationState answered {out}: {e}"))
    }
}

/// Reads USDC's `authorizationState` through `BASE_RPC_URL` (reconciliation, x402 notes §7.2).
#[derive(Clone)]
pub struct ChainReader {
    pub(super) rpc: Rpc,
}

impl ChainReader {
    /// No request is made until the first read.
    pub fn new(rpc_url: &Secret, network: Network) -> Result<Self, ChainError> {
        Ok(Self {
            rpc: Rpc::new(rpc_url, network)?,
        })
    }

    /// Decides at `finality` rather than the defaults (`SETTLEMENT_CONFIRMATIONS`,
    /// `BASE_RPC_MAX_HEAD_AGE_S`).
    pub fn with_finality(mut self, finality: Finality) -> Self {
        self.rpc.finality = finality;
        self
    }
}

#[async_trait]
impl AuthorizationReader for ChainReader {
    async fn authorization_used(&self, authorizer: Address, nonce: B256) -> Result<bool, String> {
        self.rpc.authorization_used(authorizer, nonce).await
    }
    async fn authorization(
        &self,
        query: &AuthorizationQuery,
    ) -> Result<AuthorizationState, String> {
        self.rpc.authorization(query).await
    }
    async fn transfer(
        &self,
        transaction: &str,
        query: &AuthorizationQuery,
        reported_at: u64,
    ) -> Result<TransferStanding, String> {
        self.rpc.transfer(transaction, query, reported_at).await
    }
}
