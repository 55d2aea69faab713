//! Smart-wallet payers on the local chain: our `OwnedWallet` (tests/contracts/SmartWallet.sol),
//! deployed by its `WalletFactory` at an address known in advance, paying with its owner key's
//! signature in the wallet's own encoding, wrapped in ERC-6492 while it is not deployed yet.
//!
//! The encodings are written here from the EIPs, not taken from grove-api, so that a shared
//! mistake cannot make both sides agree.

use crate::chain::Chain;
use crate::chain::USDC;
use alloy_primitives::{Address, B256, Bytes, address};
use alloy_sol_types::{SolCall, SolEvent, SolValue, sol};
use grove_http::IUsdc;
use serde_json::json;

/// Where the tests place the factory (`anvil_setCode`); any address without code would do.
pub const WALLET_FACTORY: Address = address!("0x000000000000000000000000000000000000Fac7");

sol! {
    interface IWalletFactory {
        function createWallet(address owner, bytes32 salt) external returns (address wallet);
        function walletAddress(address owner, bytes32 salt) external view returns (address);
        event WalletCreated(address indexed wallet, address indexed owner);
    }
}

/// How the owner's 65-byte signature is handed to `OwnedWallet.isValidSignature`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// As it is (r ‖ s ‖ v): 65 bytes that recover the owner, not the wallet.
    Raw,
    /// `abi.encode(address owner, bytes signature)`: longer than 65 bytes.
    Named,
}

/// A smart wallet that pays (`TestWallet::owning`).
#[derive(Clone, Debug)]
pub struct SmartAccount {
    pub address: Address,
    pub owner: Address,
    pub encoding: Encoding,
    /// ERC-6492: the factory and the call that deploys the wallet, wrapped around every
    /// signature while it has no code.
    pub deployment: Option<(Address, Vec<u8>)>,
}

impl SmartAccount {
    /// The signature the payment carries, from the owner's ECDSA signature.
    pub fn encode(&self, ecdsa: &[u8]) -> Vec<u8> {
        let signature = match self.encoding {
            Encoding::Raw => ecdsa.to_vec(),
            Encoding::Named => (self.owner, Bytes::copy_from_slice(ecdsa)).abi_encode_params(),
        };
        match &self.deployment {
            None => signature,
            Some((factory, calldata)) => erc6492(*factory, calldata, &signature),
        }
    }

    /// The same wallet, its signatures no longer wrapped (once it is deployed).
    pub fn deployed(self) -> Self {
        Self {
            deployment: None,
            ..self
        }
    }
}

/// `abi.encode(factory, factoryCalldata, signature) ‖ 0x6492…6492` (ERC-6492).
pub fn erc6492(factory: Address, calldata: &[u8], signature: &[u8]) -> Vec<u8> {
    let mut wrapped = (
        factory,
        Bytes::copy_from_slice(calldata),
        Bytes::copy_from_slice(signature),
    )
        .abi_encode_params();
    wrapped.extend(std::iter::repeat_n([0x64, 0x92], 16).flatten());
    wrapped
}

/// The factory call that deploys `owner`'s wallet for `salt`.
pub fn create_call(owner: Address, salt: B256) -> Vec<u8> {
    IWalletFactory::createWalletCall { owner, salt }.abi_encode()
}

impl Chain {
    /// The address `owner`'s wallet has (or will have) for `salt`.
    pub async fn wallet_address(&self, owner: Address, salt: B256) -> Address {
        let data = IWalletFactory::walletAddressCall { owner, salt }.abi_encode();
        let out = self
            .rpc(
                "eth_call",
                json!([{"to": WALLET_FACTORY, "data": alloy_primitives::hex::encode_prefixed(data)}, "latest"]),
            )
            .await;
        let bytes = alloy_primitives::hex::decode(out.as_str().expect("hex")).expect("hex");
        IWalletFactory::walletAddressCall::abi_decode_returns(&bytes).expect("an address")
    }

    /// A wallet of `owner` not deployed yet: it signs with ERC-6492.
    pub async fn counterfactual_wallet(
        &self,
        owner: Address,
        salt: B256,
        encoding: Encoding,
    ) -> SmartAccount {
        SmartAccount {
            address: self.wallet_address(owner, salt).await,
            owner,
            encoding,
            deployment: Some((WALLET_FACTORY, create_call(owner, salt))),
        }
    }

    /// A wallet of `owner`, deployed now (by someone else than the settler).
    pub async fn deployed_wallet(
        &self,
        owner: Address,
        salt: B256,
        encoding: Encoding,
    ) -> SmartAccount {
        self.send_as_minter(WALLET_FACTORY, create_call(owner, salt))
            .await;
        let wallet = self
            .counterfactual_wallet(owner, salt, encoding)
            .await
            .deployed();
        assert!(
            self.has_code(wallet.address).await,
            "the wallet is deployed"
        );
        wallet
    }

    pub async fn has_code(&self, who: Address) -> bool {
        let code = self.rpc("eth_getCode", json!([who, "latest"])).await;
        code.as_str().is_some_and(|c| c != "0x")
    }

    /// How many USDC `Transfer`s moved money out of `from`.
    pub async fn transfers_from(&self, from: Address) -> usize {
        let logs = self
            .rpc(
                "eth_getLogs",
                json!([{
                    "address": USDC,
                    "fromBlock": "0x0",
                    "toBlock": "latest",
                    "topics": [IUsdc::Transfer::SIGNATURE_HASH, from.into_word()],
                }]),
            )
            .await;
        logs.as_array().expect("logs").len()
    }

    /// How many wallets the factory deployed.
    pub async fn wallets_created(&self) -> usize {
        let logs = self
            .rpc(
                "eth_getLogs",
                json!([{
                    "address": WALLET_FACTORY,
                    "fromBlock": "0x0",
                    "toBlock": "latest",
                    "topics": [IWalletFactory::WalletCreated::SIGNATURE_HASH],
                }]),
            )
            .await;
        logs.as_array().expect("logs").len()
    }
}
