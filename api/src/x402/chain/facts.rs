//! What the doctor reads off `BASE_RPC_URL` before any traffic: which chain it serves, whether
//! USDC's contract is there, how fresh its head is, and the gas balance of an address.

use super::{ChainError, rpc::ChainReader};
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::BlockNumberOrTag;
use grove_common::config::Network;

/// What to do about an endpoint that does not serve `network` (start-up and the doctor).
pub fn rpc_fix(network: Network) -> &'static str {
    match network {
        Network::Base => "point it at a Base mainnet JSON-RPC endpoint",
        Network::BaseSepolia => "point it at a Base Sepolia JSON-RPC endpoint",
    }
}

/// One look at the chain behind an RPC endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainFacts {
    pub chain_id: u64,
    /// Bytes of code at the configured network's USDC address (0: no contract there, so not
    /// that network's USDC).
    pub usdc_code_len: usize,
    pub head_number: u64,
    /// Unix seconds of the head block.
    pub head_timestamp: u64,
}

impl ChainFacts {
    /// Why this endpoint is not `network` with its USDC on it, if it is not: the doctor's `rpc`
    /// check and the api's start-up refusal both read this.
    pub fn not_on(&self, network: Network) -> Option<String> {
        let (name, id) = (network.display_name(), network.chain_id());
        if self.chain_id != id {
            return Some(format!("serves chain {}, not {name} ({id})", self.chain_id));
        }
        if self.usdc_code_len == 0 {
            let usdc = network.usdc();
            return Some(format!("has no contract at USDC's address {usdc}"));
        }
        None
    }
}

impl ChainReader {
    /// Start-up: an endpoint that does not answer, or is not the configured network with USDC on
    /// it, would decide settlements from the wrong chain. One line naming the variable and the fix.
    pub async fn check_serves_network(&self) -> Result<ChainFacts, ChainError> {
        let facts = self.facts().await.map_err(ChainError::Rpc)?;
        match facts.not_on(self.rpc.network) {
            Some(problem) => Err(ChainError::NotOurChain(format!(
                "{problem}: {}",
                rpc_fix(self.rpc.network)
            ))),
            None => Ok(facts),
        }
    }

    pub async fn facts(&self) -> Result<ChainFacts, String> {
        let p = &self.rpc.provider;
        let chain_id = p.get_chain_id().await.map_err(|e| self.rpc.describe(&e))?;
        let code = p
            .get_code_at(self.rpc.usdc())
            .await
            .map_err(|e| self.rpc.describe(&e))?;
        let head = p
            .get_block_by_number(BlockNumberOrTag::Latest)
            .await
            .map_err(|e| self.rpc.describe(&e))?
            .ok_or("the endpoint has no latest block")?;
        Ok(ChainFacts {
            chain_id,
            usdc_code_len: code.len(),
            head_number: head.header.number,
            head_timestamp: head.header.timestamp,
        })
    }

    /// Wei held by `address` (the settler's gas).
    pub async fn balance(&self, address: Address) -> Result<U256, String> {
        self.rpc
            .provider
            .get_balance(address)
            .await
            .map_err(|e| self.rpc.describe(&e))
    }
}
