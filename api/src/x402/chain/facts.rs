//! What the doctor reads off `BASE_RPC_URL` before any traffic: which chain it serves, whether
//! USDC's contract is there, how fresh its head is, and the gas balance of an address.

use super::rpc::ChainReader;
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::BlockNumberOrTag;

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

impl ChainReader {
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
