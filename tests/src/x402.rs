//! A test wallet that pays x402 challenges with real EIP-3009 signatures, the way x402 clients
//! do, and that can forge every field a verifier must check.
//!
//! It builds its EIP-712 message and domain on its own (from the challenge's `asset` and
//! `extra`), not through grove-api's code, so a shared mistake cannot make both sides agree.

use alloy_primitives::{Address, B256, U256, address, uint};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::{SolStruct, eip712_domain, sol};
use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

sol! {
    struct CancelAuthorization {
        address authorizer;
        bytes32 nonce;
    }

    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// Anvil's first development key: public, so never worth anything on mainnet.
pub const TEST_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// The secp256k1 group order, for building the malleated (high-s) twin of a signature.
const SECP256K1N_ORDER: U256 =
    uint!(0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141_U256);

/// How to forge a payment. `Default` pays honestly.
#[derive(Clone, Debug, Default)]
pub struct PayOptions {
    /// Authorized value (decimal string) instead of the challenge's amount.
    pub value: Option<String>,
    /// Recipient instead of the challenge's `payTo`.
    pub to: Option<Address>,
    /// Default: now - 600, as the reference clients do.
    pub valid_after: Option<u64>,
    /// Default: now + the challenge's `maxTimeoutSeconds`.
    pub valid_before: Option<u64>,
    /// Default: 32 random bytes.
    pub nonce: Option<B256>,
    /// EIP-712 domain name instead of the challenge's `extra.name` (e.g. "USDC").
    pub domain_name: Option<String>,
    /// EIP-712 chain id instead of the one the challenge's `network` names.
    pub chain_id: Option<u64>,
    /// EIP-712 verifying contract instead of the challenge's `asset`.
    pub verifying_contract: Option<Address>,
    /// Flips the lowest bit of `s`: still well formed and low-s, so it recovers someone else.
    pub corrupt_signature: bool,
    /// Replaces `s` by `n - s` and flips `v`: ecrecover accepts it, USDC does not.
    pub high_s: bool,
    /// Signs with a fresh random key while still naming this wallet as `from`.
    pub sign_with_other_key: bool,
    /// Edits the JSON payload after signing (tampering, wrong network, a v1 version number, ...).
    pub after_signing: Option<fn(&mut Value)>,
}

pub struct TestWallet {
    signer: PrivateKeySigner,
    /// A smart wallet the key signs for (`crate::smart_wallet`): the payer then, not the key.
    contract: Option<crate::smart_wallet::SmartAccount>,
}

impl Default for TestWallet {
    fn default() -> Self {
        Self::new()
    }
}

impl TestWallet {
    /// The fixed test key, so addresses are stable across runs.
    pub fn new() -> Self {
        Self {
            signer: TEST_KEY.parse().expect("the test key parses"),
            contract: None,
        }
    }

    pub fn random() -> Self {
        Self {
            signer: PrivateKeySigner::random(),
            contract: None,
        }
    }

    /// A wallet of this key.
    pub fn with_key(signer: PrivateKeySigner) -> Self {
        Self {
            signer,
            contract: None,
        }
    }

    /// This key paying as the owner of a smart wallet: `from` is the wallet, and the signature
    /// is the key's, encoded as the wallet expects.
    pub fn owning(self, contract: crate::smart_wallet::SmartAccount) -> Self {
        Self {
            contract: Some(contract),
            ..self
        }
    }

    /// The payer: the smart wallet when there is one, else the key's address.
    pub fn address(&self) -> Address {
        self.contract
            .as_ref()
            .map_or_else(|| self.signer.address(), |c| c.address)
    }

    /// The key's own address (a smart wallet's owner).
    pub fn key_address(&self) -> Address {
        self.signer.address()
    }

    /// EIP-3009 `cancelAuthorization`'s signature (r ‖ s ‖ v) for `nonce`, under Base USDC's
    /// domain: what a payer signs to void an authorization it handed out.
    pub fn cancel_signature(&self, nonce: B256) -> [u8; 65] {
        let message = CancelAuthorization {
            authorizer: self.address(),
            nonce,
        };
        let domain = eip712_domain! {
            name: "USD Coin",
            version: "2",
            chain_id: 8453,
            verifying_contract: address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
        };
        let signature = self
            .signer
            .sign_hash_sync(&message.eip712_signing_hash(&domain))
            .expect("signing a hash");
        signature.as_bytes()
    }

    /// The `PAYMENT-SIGNATURE` value for a v2 challenge (the `PAYMENT-REQUIRED` header value):
    /// echoes `accepts[0]` as `accepted`, plus `resource` and `extensions` as the spec asks.
    pub fn pay(&self, challenge_header_b64: &str, opts: PayOptions) -> String {
        let challenge = decode_b64_json(challenge_header_b64);
        let accepted = challenge["accepts"][0].clone();
        let amount = accepted["amount"].as_str().expect("v2 amount").to_owned();
        let mut doc = json!({
            "x402Version": 2,
            "resource": challenge["resource"],
            "accepted": accepted,
            "payload": self.exact_payload(&accepted, &amount, &opts),
        });
        if let Some(extensions) = challenge.get("extensions") {
            doc["extensions"] = extensions.clone();
        }
        finish(doc, &opts)
    }

    /// The `X-PAYMENT` value for a v1 challenge (the 402 JSON body).
    pub fn pay_v1(&self, v1_body: &Value, opts: PayOptions) -> String {
        let accepted = &v1_body["accepts"][0];
        let amount = accepted["maxAmountRequired"].as_str().expect("v1 amount");
        let doc = json!({
            "x402Version": 1,
            "scheme": accepted["scheme"],
            "network": accepted["network"],
            "payload": self.exact_payload(accepted, amount, &opts),
        });
        finish(doc, &opts)
    }

    /// `{signature, authorization}` for one requirement (v1 and v2 share it).
    fn exact_payload(&self, requirement: &Value, amount: &str, opts: &PayOptions) -> Value {
        let now = now_unix();
        let max_timeout = requirement["maxTimeoutSeconds"].as_u64().unwrap_or(60);
        let to = opts
            .to
            .unwrap_or_else(|| parse_address(&requirement["payTo"]));
        let value = opts.value.clone().unwrap_or_else(|| amount.to_owned());
        let valid_after = opts.valid_after.unwrap_or(now - 600);
        let valid_before = opts.valid_before.unwrap_or(now + max_timeout);
        let nonce = opts
            .nonce
            .unwrap_or_else(|| B256::from(rand::random::<[u8; 32]>()));
        let message = TransferWithAuthorization {
            from: self.address(),
            to,
            // A non-numeric forged value cannot be signed as such; sign zero, send the string.
            value: U256::from_str_radix(&value, 10).unwrap_or_default(),
            validAfter: U256::from(valid_after),
            validBefore: U256::from(valid_before),
            nonce,
        };
        let extra = &requirement["extra"];
        let domain = eip712_domain! {
            name: opts
                .domain_name
                .clone()
                .unwrap_or_else(|| extra["name"].as_str().expect("extra.name").to_owned()),
            version: extra["version"].as_str().expect("extra.version").to_owned(),
            chain_id: opts
                .chain_id
                .unwrap_or_else(|| chain_id_of(&requirement["network"])),
            verifying_contract: opts
                .verifying_contract
                .unwrap_or_else(|| parse_address(&requirement["asset"])),
        };
        let hash = message.eip712_signing_hash(&domain);
        let signer = if opts.sign_with_other_key {
            PrivateKeySigner::random()
        } else {
            self.signer.clone()
        };
        let signature = signer.sign_hash_sync(&hash).expect("signing a hash");
        // r ‖ s ‖ v with v = 27/28, as EOAs sign for USDC.
        let mut bytes = signature.as_bytes();
        if opts.high_s {
            let twin = SECP256K1N_ORDER - signature.s();
            bytes[32..64].copy_from_slice(&twin.to_be_bytes::<32>());
            bytes[64] = if bytes[64] == 27 { 28 } else { 27 };
        }
        if opts.corrupt_signature {
            bytes[63] ^= 1;
        }
        let bytes = match &self.contract {
            Some(contract) => contract.encode(&bytes),
            None => bytes.to_vec(),
        };
        json!({
            "signature": format!("0x{}", alloy_primitives::hex::encode(bytes)),
            "authorization": {
                "from": self.address().to_checksum(None),
                "to": to.to_checksum(None),
                "value": value,
                "validAfter": valid_after.to_string(),
                "validBefore": valid_before.to_string(),
                "nonce": nonce.to_string(),
            },
        })
    }
}

fn finish(mut doc: Value, opts: &PayOptions) -> String {
    if let Some(edit) = opts.after_signing {
        edit(&mut doc);
    }
    STANDARD.encode(doc.to_string())
}

/// The chain id a requirement's `network` names, as the reference clients read it: the CAIP-2
/// reference (`eip155:84532`), or a v1 name.
fn chain_id_of(network: &Value) -> u64 {
    match network.as_str().expect("the requirement names a network") {
        "base" => 8453,
        "base-sepolia" => 84532,
        caip2 => caip2
            .strip_prefix("eip155:")
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("an EVM network, not {caip2}")),
    }
}

fn parse_address(v: &Value) -> Address {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .expect("the challenge carries an address")
}

/// Decodes a base64 (standard, padded) JSON header value.
pub fn decode_b64_json(b64: &str) -> Value {
    let bytes = STANDARD.decode(b64).expect("standard padded base64");
    serde_json::from_slice(&bytes).expect("JSON")
}

pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
