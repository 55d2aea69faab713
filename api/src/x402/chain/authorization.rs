//! The signed EIP-3009 authorization inside a payment payload, as `transferWithAuthorization`'s
//! arguments, and the refusal reasons that USDC's revert messages map to.

use super::IUsdc;
use crate::x402::{
    eip3009::{self, TransferWithAuthorization},
    facilitator::SettleRequest,
    settle::AuthorizationQuery,
    signature::{self, Deployment},
};
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_sol_types::{SolCall, sol};
use grove_common::config::Network;
use serde_json::Value;

sol! {
    /// FiatToken v2.2's overload for signatures of any length (its `SignatureChecker` asks a
    /// payer with code through ERC-1271).
    interface IUsdcBytes {
        function transferWithAuthorization(
            address from, address to, uint256 value,
            uint256 validAfter, uint256 validBefore, bytes32 nonce,
            bytes signature
        ) external;
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Authorization {
    pub from: Address,
    pub to: Address,
    pub value: U256,
    pub valid_after: U256,
    pub valid_before: U256,
    pub nonce: B256,
    pub signature: PayerSignature,
}

/// The payer's signature, as the overload of `transferWithAuthorization` that takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum PayerSignature {
    /// An EOA's: 65 bytes that recover `from` (r ‖ s ‖ v), for the (v, r, s) overload.
    Ecdsa { v: u8, r: B256, s: B256 },
    /// A smart wallet's (ERC-1271), passed as it is to the `bytes` overload; for ERC-6492, the
    /// inner signature and the factory call that deploys the wallet when it has no code.
    Wallet {
        signature: Bytes,
        deployment: Option<Deployment>,
    },
}

impl Authorization {
    /// Reads `/payload/authorization` and `/payload/signature`, and checks that the requirement
    /// asks for USDC on `network` paid to `to`: the settler sends only what it was offered.
    pub fn from_request(request: &SettleRequest, network: Network) -> Result<Self, &'static str> {
        let payload = &request.payment_payload;
        let field = |name: &str| payload.pointer(&format!("/payload/authorization/{name}"));
        let address = |name: &str| {
            field(name)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Address>().ok())
                .ok_or("invalid_payload")
        };
        let uint = |name: &str| {
            field(name)
                .and_then(|v| match v {
                    Value::String(s) => U256::from_str_radix(s, 10).ok(),
                    Value::Number(n) => n.as_u64().map(U256::from),
                    _ => None,
                })
                .ok_or("invalid_payload")
        };
        let nonce: B256 = field("nonce")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or("invalid_payload")?;
        let signature = payload
            .pointer("/payload/signature")
            .and_then(Value::as_str)
            .and_then(|s| alloy_primitives::hex::decode(s).ok())
            .ok_or("invalid_payload")?;
        let message = TransferWithAuthorization {
            from: address("from")?,
            to: address("to")?,
            value: uint("value")?,
            validAfter: uint("validAfter")?,
            validBefore: uint("validBefore")?,
            nonce,
        };
        let auth = Self {
            signature: PayerSignature::of(&message, &signature, network)?,
            from: message.from,
            to: message.to,
            value: message.value,
            valid_after: message.validAfter,
            valid_before: message.validBefore,
            nonce,
        };
        let requirement = &request.payment_requirements;
        let offered = |name: &str| {
            requirement
                .get(name)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Address>().ok())
        };
        if offered("asset").is_some_and(|asset| asset != network.usdc()) {
            return Err("unsupported_asset");
        }
        if offered("payTo").is_some_and(|pay_to| pay_to != auth.to) {
            return Err("recipient_mismatch");
        }
        Ok(auth)
    }

    /// The chain question "did this authorization pay us?", for uses since `since` (unix s),
    /// asked at `asked_at` (our wall clock, unix s).
    pub fn query(&self, since: u64, asked_at: u64) -> AuthorizationQuery {
        AuthorizationQuery {
            authorizer: self.from,
            nonce: self.nonce,
            to: self.to,
            value: self.value,
            since,
            valid_before: u64::try_from(self.valid_before).unwrap_or(u64::MAX),
            asked_at,
        }
    }

    /// USDC's `transferWithAuthorization` in the overload the signature takes.
    pub fn calldata(&self) -> Bytes {
        match &self.signature {
            PayerSignature::Ecdsa { v, r, s } => transfer_with_vrs(self, *v, *r, *s),
            PayerSignature::Wallet { signature, .. } => transfer_with_bytes(self, signature),
        }
        .into()
    }

    /// The ERC-6492 factory call of a payer that signed before its wallet was deployed.
    pub fn deployment(&self) -> Option<&Deployment> {
        match &self.signature {
            PayerSignature::Wallet { deployment, .. } => deployment.as_ref(),
            PayerSignature::Ecdsa { .. } => None,
        }
    }
}

impl PayerSignature {
    /// An EOA's signature when it recovers `from` (as local verification found), a wallet's
    /// otherwise: only one that passed the wallet's check on chain reaches settlement.
    fn of(
        message: &TransferWithAuthorization,
        signature: &[u8],
        network: Network,
    ) -> Result<Self, &'static str> {
        let domain = eip3009::usdc_domain(network);
        if eip3009::check_signature(message, &domain, signature).is_ok()
            && let [rs @ .., v] = signature
        {
            return Ok(Self::Ecdsa {
                v: *v,
                r: B256::from_slice(&rs[..32]),
                s: B256::from_slice(&rs[32..64]),
            });
        }
        Ok(match signature::unwrap_erc6492(signature) {
            Some(Ok((signature, deployment))) => Self::Wallet {
                signature,
                deployment: Some(deployment),
            },
            Some(Err(())) => return Err("invalid_signature"),
            None => Self::Wallet {
                signature: Bytes::copy_from_slice(signature),
                deployment: None,
            },
        })
    }
}

/// USDC's `transferWithAuthorization` with the signature as bytes (FiatToken v2.2).
fn transfer_with_bytes(auth: &Authorization, signature: &Bytes) -> Vec<u8> {
    IUsdcBytes::transferWithAuthorizationCall {
        from: auth.from,
        to: auth.to,
        value: auth.value,
        validAfter: auth.valid_after,
        validBefore: auth.valid_before,
        nonce: auth.nonce,
        signature: signature.clone(),
    }
    .abi_encode()
}

/// USDC's (v, r, s) overload, for an EOA's signature.
fn transfer_with_vrs(auth: &Authorization, v: u8, r: B256, s: B256) -> Vec<u8> {
    IUsdc::transferWithAuthorizationCall {
        from: auth.from,
        to: auth.to,
        value: auth.value,
        validAfter: auth.valid_after,
        validBefore: auth.valid_before,
        nonce: auth.nonce,
        v,
        r,
        s,
    }
    .abi_encode()
}

/// A USDC revert message as a refusal reason: the three a client can act on get stable codes
/// (`authorization_used`, `insufficient_funds`, `invalid_signature`); any other is kept as USDC
/// wrote it (an expired or not yet valid authorization, a blacklisted or paused account).
pub fn refusal_reason(revert: &str) -> String {
    let text = revert
        .trim()
        .trim_start_matches("execution reverted")
        .trim_start_matches(':')
        .trim();
    // alloy's decoder prefixes `Error(string)` reasons with "revert: ".
    let text = text.strip_prefix("revert:").unwrap_or(text).trim();
    let lower = text.to_ascii_lowercase();
    if lower.contains("authorization is used") {
        "authorization_used".into()
    } else if lower.contains("exceeds balance") {
        "insufficient_funds".into()
    } else if lower.contains("invalid signature") {
        "invalid_signature".into()
    } else if text.is_empty() {
        "transaction_reverted".into()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(signature: &str, pay_to: &str) -> SettleRequest {
        SettleRequest {
            x402_version: 2,
            payment_payload: json!({"payload": {
                "signature": signature,
                "authorization": {
                    "from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
                    "to": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
                    "value": "180000",
                    "validAfter": "1",
                    "validBefore": "4000000000",
                    "nonce": format!("0x{}", "ab".repeat(32)),
                },
            }}),
            payment_requirements: json!({"asset": Network::Base.usdc_address(), "payTo": pay_to}),
        }
    }

    const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

    fn from_request(request: &SettleRequest) -> Result<Authorization, &'static str> {
        Authorization::from_request(request, Network::Base)
    }

    /// Anvil's first development key, whose address is the requests' `from`.
    fn payer_key() -> alloy_signer_local::PrivateKeySigner {
        "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
            .parse()
            .expect("the test key parses")
    }

    fn selector(auth: &Authorization) -> [u8; 4] {
        auth.calldata()[..4].try_into().expect("a selector")
    }

    #[test]
    fn an_eoas_signature_is_split_for_the_vrs_overload() {
        use alloy_signer::SignerSync;
        let unsigned =
            from_request(&request(&format!("0x{}", "11".repeat(66)), PAY_TO)).expect("parses");
        let message = TransferWithAuthorization {
            from: unsigned.from,
            to: unsigned.to,
            value: unsigned.value,
            validAfter: unsigned.valid_after,
            validBefore: unsigned.valid_before,
            nonce: unsigned.nonce,
        };
        let digest = eip3009::signing_hash(&message, &eip3009::usdc_domain(Network::Base));
        let sig = payer_key()
            .sign_hash_sync(&digest)
            .expect("signs")
            .as_bytes();
        let auth = from_request(&request(
            &alloy_primitives::hex::encode_prefixed(sig),
            PAY_TO,
        ))
        .expect("parses");
        assert_eq!(auth.value, U256::from(180_000));
        assert_eq!(
            auth.signature,
            PayerSignature::Ecdsa {
                v: sig[64],
                r: B256::from_slice(&sig[..32]),
                s: B256::from_slice(&sig[32..64]),
            }
        );
        assert_eq!(
            selector(&auth),
            IUsdc::transferWithAuthorizationCall::SELECTOR
        );
    }

    #[test]
    fn any_other_signature_goes_as_it_is_to_the_bytes_overload() {
        // 65 bytes that recover someone else: a wallet's (its owner's key), not the payer's.
        let sig = format!("0x{}{}1c", "11".repeat(32), "22".repeat(32));
        let auth = from_request(&request(&sig, PAY_TO)).expect("parses");
        let raw = alloy_primitives::hex::decode(&sig).expect("hex");
        assert_eq!(
            auth.signature,
            PayerSignature::Wallet {
                signature: raw.into(),
                deployment: None
            }
        );
        assert_eq!(
            selector(&auth),
            IUsdcBytes::transferWithAuthorizationCall::SELECTOR
        );
        assert_eq!(auth.deployment(), None);
    }

    #[test]
    fn an_erc6492_signature_settles_its_inner_signature_behind_its_factory_call() {
        use alloy_sol_types::SolValue;
        let factory = Address::repeat_byte(0xfa);
        let inner = Bytes::from(vec![7u8; 90]);
        let mut sig = (factory, Bytes::from_static(&[1, 2]), inner.clone()).abi_encode_params();
        sig.extend_from_slice(&signature::ERC6492_SUFFIX);
        let auth = from_request(&request(
            &alloy_primitives::hex::encode_prefixed(&sig),
            PAY_TO,
        ))
        .expect("parses");
        let deployment = Deployment {
            factory,
            calldata: Bytes::from_static(&[1, 2]),
        };
        assert_eq!(auth.deployment(), Some(&deployment));
        let expected = IUsdcBytes::transferWithAuthorizationCall {
            from: auth.from,
            to: auth.to,
            value: auth.value,
            validAfter: auth.valid_after,
            validBefore: auth.valid_before,
            nonce: auth.nonce,
            signature: inner,
        };
        assert_eq!(auth.calldata(), Bytes::from(expected.abi_encode()));
    }

    #[test]
    fn refuses_what_it_was_not_offered_and_malformed_signatures() {
        let sig = format!("0x{}1b", "11".repeat(64));
        let other = "0x0000000000000000000000000000000000000001";
        assert_eq!(
            from_request(&request(&sig, other)),
            Err("recipient_mismatch")
        );
        let suffix_only = alloy_primitives::hex::encode_prefixed(signature::ERC6492_SUFFIX);
        assert_eq!(
            from_request(&request(&suffix_only, PAY_TO)),
            Err("invalid_signature")
        );
        assert_eq!(
            from_request(&request("0xzz", PAY_TO)),
            Err("invalid_payload")
        );
    }

    #[test]
    fn usdc_reverts_map_to_stable_reasons() {
        for (revert, reason) in [
            (
                "execution reverted: FiatTokenV2: authorization is used or canceled",
                "authorization_used",
            ),
            (
                "ERC20: transfer amount exceeds balance",
                "insufficient_funds",
            ),
            ("FiatTokenV2: invalid signature", "invalid_signature"),
            (
                "ECRecover: invalid signature 's' value",
                "invalid_signature",
            ),
            (
                "FiatTokenV2: authorization is expired",
                "FiatTokenV2: authorization is expired",
            ),
            ("execution reverted", "transaction_reverted"),
            (
                "revert: FiatTokenV2: authorization is expired",
                "FiatTokenV2: authorization is expired",
            ),
        ] {
            assert_eq!(refusal_reason(revert), reason, "{revert}");
        }
    }
}
