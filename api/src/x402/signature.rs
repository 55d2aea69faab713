//! How a payment's signature is to be checked (docs/smart-wallets.md): here, when it is an EOA's
//! ECDSA over the authorization (65 bytes that recover `authorization.from`), or by the payer's
//! wallet on chain (`smart_wallet`) when it is anything else: an ERC-1271 wallet's signature, or
//! an ERC-6492 one wrapped around the factory call of a wallet not deployed yet.
//!
//! Without a chain, a signature that could still be an EOA's keeps its EOA refusal and any other
//! is refused as `smart_wallet_needs_chain`.

use super::{
    eip3009::{self, TransferWithAuthorization},
    rejection::PaymentRejection,
};
use alloy_primitives::{Address, B256, Bytes, hex};
use alloy_sol_types::SolValue;
use grove_common::config::Network;

/// The last 32 bytes of every ERC-6492 signature.
pub const ERC6492_SUFFIX: [u8; 32] =
    hex!("6492649264926492649264926492649264926492649264926492649264926492");

/// ERC-6492: the factory call that deploys a counterfactual wallet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployment {
    pub factory: Address,
    pub calldata: Bytes,
}

/// A signature the payer's wallet must vouch for, as the chain is asked about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalletSignature {
    pub wallet: Address,
    /// The EIP-712 digest of the authorization under USDC's domain on the configured network:
    /// what USDC asks the wallet.
    pub digest: B256,
    /// What `isValidSignature` (and USDC's `bytes` overload) receives: unwrapped for ERC-6492.
    pub signature: Bytes,
    /// Present for ERC-6492 signatures.
    pub deployment: Option<Deployment>,
}

/// How a payment's signature is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Signed {
    /// 65 bytes that recover `authorization.from`: checked here, no chain needed.
    ByKey,
    /// Only the payer's wallet can tell. `if_no_wallet` is the EOA refusal of a signature that
    /// could still be an EOA's (65 bytes or fewer), for a payer that turns out to have no code.
    ByWallet {
        signature: WalletSignature,
        if_no_wallet: Option<PaymentRejection>,
    },
}

impl Signed {
    /// Classifies `signature` (raw bytes) over `message`, under USDC's domain on `network`.
    pub(crate) fn classify(
        message: &TransferWithAuthorization,
        signature: &[u8],
        network: Network,
    ) -> Result<Self, PaymentRejection> {
        let domain = eip3009::usdc_domain(network);
        let problem = match eip3009::check_signature(message, &domain, signature) {
            Ok(()) => return Ok(Self::ByKey),
            Err(problem) => problem,
        };
        let (inner, deployment) = match unwrap_erc6492(signature) {
            Some(Ok((inner, deployment))) => (inner, Some(deployment)),
            Some(Err(())) => return Err(PaymentRejection::MalformedErc6492),
            None => (Bytes::copy_from_slice(signature), None),
        };
        // Longer than 65 bytes can be no EOA's signature (FiatToken's ECRecover takes 65 only).
        let if_no_wallet =
            (signature.len() <= 65).then(|| PaymentRejection::of_signature(problem, network));
        Ok(Self::ByWallet {
            signature: WalletSignature {
                wallet: message.from,
                digest: eip3009::signing_hash(message, &domain),
                signature: inner,
                deployment,
            },
            if_no_wallet,
        })
    }

    /// The verdict without a chain.
    pub(crate) fn without_chain(&self) -> Result<(), PaymentRejection> {
        match self {
            Self::ByKey => Ok(()),
            Self::ByWallet {
                if_no_wallet: Some(refusal),
                ..
            } => Err(refusal.clone()),
            Self::ByWallet { .. } => Err(PaymentRejection::SmartWalletNeedsChain),
        }
    }
}

/// `None`: not an ERC-6492 signature. `Some(Err)`: it ends with the suffix but does not decode.
pub fn unwrap_erc6492(signature: &[u8]) -> Option<Result<(Bytes, Deployment), ()>> {
    let wrapped = signature.strip_suffix(ERC6492_SUFFIX.as_slice())?;
    Some(
        <(Address, Bytes, Bytes)>::abi_decode_params(wrapped)
            .map(|(factory, calldata, inner)| (inner, Deployment { factory, calldata }))
            .map_err(|_| ()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{U256, address};

    fn message() -> TransferWithAuthorization {
        TransferWithAuthorization {
            from: address!("0x00000000000000000000000000000000000000aa"),
            to: address!("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
            value: U256::from(180_000u64),
            validAfter: U256::from(1u64),
            validBefore: U256::from(4_000_000_000u64),
            nonce: B256::repeat_byte(7),
        }
    }

    fn wrap(factory: Address, calldata: &[u8], inner: &[u8]) -> Vec<u8> {
        let mut sig = (
            factory,
            Bytes::copy_from_slice(calldata),
            Bytes::copy_from_slice(inner),
        )
            .abi_encode_params();
        sig.extend_from_slice(&ERC6492_SUFFIX);
        sig
    }

    #[test]
    fn an_erc6492_signature_unwraps_to_its_factory_call_and_inner_signature() {
        let factory = address!("0x000000000000000000000000000000000000fac7");
        let sig = wrap(factory, &[1, 2, 3], &[9; 70]);
        let Ok(Signed::ByWallet {
            signature,
            if_no_wallet,
        }) = Signed::classify(&message(), &sig, Network::Base)
        else {
            panic!("a wallet's signature");
        };
        assert_eq!(signature.wallet, message().from);
        assert_eq!(signature.signature.as_ref(), &[9; 70]);
        assert_eq!(
            signature.deployment,
            Some(Deployment {
                factory,
                calldata: Bytes::from_static(&[1, 2, 3])
            })
        );
        assert_eq!(
            signature.digest,
            eip3009::signing_hash(&message(), &eip3009::usdc_domain(Network::Base))
        );
        assert_eq!(if_no_wallet, None);
    }

    #[test]
    fn the_suffix_on_something_that_does_not_decode_is_refused() {
        let mut sig = vec![0u8; 40];
        sig.extend_from_slice(&ERC6492_SUFFIX);
        assert_eq!(
            Signed::classify(&message(), &sig, Network::Base),
            Err(PaymentRejection::MalformedErc6492)
        );
    }

    #[test]
    fn without_a_chain_what_could_be_an_eoas_keeps_its_refusal_and_the_rest_needs_the_chain() {
        let long = Signed::classify(&message(), &[1; 66], Network::Base).expect("classified");
        assert_eq!(
            long.without_chain(),
            Err(PaymentRejection::SmartWalletNeedsChain)
        );
        let wrapped = wrap(Address::ZERO, &[], &[1; 65]);
        let wrapped = Signed::classify(&message(), &wrapped, Network::Base).expect("classified");
        assert_eq!(
            wrapped.without_chain(),
            Err(PaymentRejection::SmartWalletNeedsChain)
        );
        let mut short = [1u8; 65];
        short[64] = 27;
        let short = Signed::classify(&message(), &short, Network::Base).expect("classified");
        assert!(matches!(
            short,
            Signed::ByWallet {
                if_no_wallet: Some(_),
                ..
            }
        ));
        assert_ne!(
            short.without_chain(),
            Err(PaymentRejection::SmartWalletNeedsChain)
        );
        assert_eq!(
            Signed::classify(&message(), &[], Network::Base).map(|s| s.without_chain()),
            Ok(Err(PaymentRejection::BadSignature))
        );
    }
}
