//! What the doctor reads off `BASE_RPC_URL` before any traffic: which chain it serves, whether
//! USDC's contract is there, how fresh its head is, and the gas balance of an address.

use super::{ChainError, USDC, rpc::ChainReader};
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::BlockNumberOrTag;

/// One look at the chain behind an RPC endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainFacts {
    pub chain_id: u64,
    /// Bytes of code at USDC's address (0: no contract there, so not Base mainnet's USDC).
    pub usdc_code_len: usize,
    pub head_number: u64,
    /// Unix seconds of the head block.
    pub head_timestamp: u64,
}

impl ChainFacts {
    /// Why this endpoint is not Base with USDC on it, if it is not: the doctor's `rpc` check and
    /// the api's start-up refusal both read this.
    pub fn not_base(&self) -> Option<String> {
        let base = grove_common::x402::CHAIN_ID;
        if self.chain_id != base {
            return Some(format!("serves chain {}, not Base ({base})", self.chain_id));
        }
        if self.usdc_code_len == 0 {
            return Some(format!("has no contract at USDC's address {USDC}"));
        }
        None
    }
}

impl ChainReader {
    /// Start-up: an endpoint that does not answer, or is not Base with USDC on it, would decide
    /// settlements from the wrong chain. One line naming the variable and the fix.
    pub async fn check_serves_base(&self) -> Result<ChainFacts, ChainError> {
        let facts = self.facts().await.map_err(ChainError::Rpc)?;
        match facts.not_base() {
            Some(problem) => Err(ChainError::NotBase(problem)),
            None => Ok(facts),
        }
    }

    pub async fn facts(&self) -> Result<ChainFacts, String> {
        let p = &self.rpc.provider;
        let chain_id = p.get_chain_id().await.map_err(|e| self.rpc.describe(&e))?;
        let code = p
            .get_code_at(USDC)
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
