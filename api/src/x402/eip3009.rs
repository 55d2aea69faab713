//! The EIP-3009 `TransferWithAuthorization` message, its EIP-712 hash and the signature check.
//!
//! All hashing and elliptic-curve work is alloy's; this module only decides which domain and
//! which signature encodings we accept. The domain is USDC's on the configured network.

use alloy_primitives::{Address, B256, Signature, U256, uint};
use alloy_sol_types::{Eip712Domain, SolStruct, eip712_domain, sol};
use grove_common::config::Network;

sol! {
    /// Field-for-field the struct USDC's `EIP3009.sol` hashes.
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// Half the secp256k1 group order (n / 2, rounded down): USDC's `ECRecover` refuses any `s`
/// above it.
const SECP256K1N_HALF: U256 =
    uint!(0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0_U256);

/// The only domain we accept: USDC's on `network` (on Base mainnet "USD Coin", version "2",
/// chain 8453; on Base Sepolia "USDC", version "2", chain 84532).
pub(crate) fn usdc_domain(network: Network) -> Eip712Domain {
    eip712_domain! {
        name: network.usdc_domain_name(),
        version: network.usdc_domain_version(),
        chain_id: network.chain_id(),
        verifying_contract: network.usdc(),
    }
}

/// The digest the payer signed: `keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message))`.
pub(crate) fn signing_hash(message: &TransferWithAuthorization, domain: &Eip712Domain) -> B256 {
    message.eip712_signing_hash(domain)
}

/// Why a signature was refused, before or after recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignatureProblem {
    /// Not 65 bytes, `v` not 27/28, zero scalars, or no key recovers from it.
    Malformed,
    /// `s` in the upper half order: a malleated twin that USDC would reject on chain.
    HighS,
    /// Well formed, but signed by someone other than `authorization.from`.
    WrongSigner(Address),
}

/// Checks `signature` (r ‖ s ‖ v) over `message` under `domain` and that it recovers `from`.
pub(crate) fn check_signature(
    message: &TransferWithAuthorization,
    domain: &Eip712Domain,
    signature: &[u8],
) -> Result<(), SignatureProblem> {
    // Any other length is no EOA's: a smart wallet's signature, for `smart_wallet` to check.
    let Ok(raw) = <&[u8; 65]>::try_from(signature) else {
        return Err(SignatureProblem::Malformed);
    };
    let (rs, v) = raw.split_at(64);
    // Electrum notation only, as USDC's ECRecover requires; alloy would also take 0/1 and EIP-155.
    let y_parity = match v.first() {
        Some(27) => false,
        Some(28) => true,
        _ => return Err(SignatureProblem::Malformed),
    };
    let r = U256::from_be_slice(&rs[..32]);
    let s = U256::from_be_slice(&rs[32..]);
    if r.is_zero() || s.is_zero() {
        return Err(SignatureProblem::Malformed);
    }
    // alloy normalises s before recovering, so a high-s twin would recover the same signer:
    // it must be refused here, not left to recovery.
    if s > SECP256K1N_HALF {
        return Err(SignatureProblem::HighS);
    }
    let recovered = Signature::new(r, s, y_parity)
        .recover_address_from_prehash(&signing_hash(message, domain))
        .map_err(|_| SignatureProblem::Malformed)?;
    if recovered == message.from {
        Ok(())
    } else {
        Err(SignatureProblem::WrongSigner(recovered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, b256, hex};

    /// The example payload of the x402 specs (Base Sepolia USDC), notes/x402.md §1.7.
    fn spec_vector() -> (TransferWithAuthorization, Eip712Domain, Vec<u8>) {
        let message = TransferWithAuthorization {
            from: address!("0x857b06519E91e3A54538791bDbb0E22373e36b66"),
            to: address!("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
            value: U256::from(10_000u64),
            validAfter: U256::from(1_740_672_089u64),
            validBefore: U256::from(1_740_672_154u64),
            nonce: b256!("0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480"),
        };
        // The spec's own domain, spelled out: it must be the one we build for Base Sepolia.
        let domain = eip712_domain! {
            name: "USDC",
            version: "2",
            chain_id: 84532,
            verifying_contract: address!("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
        };
        assert_eq!(domain, usdc_domain(Network::BaseSepolia));
        let signature = hex::decode(
            "0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c",
        )
        .expect("hex literal");
        (message, domain, signature)
    }

    #[test]
    fn spec_test_vector_recovers_its_from_under_its_own_domain() {
        let (message, domain, signature) = spec_vector();
        assert_eq!(check_signature(&message, &domain, &signature), Ok(()));
    }

    #[test]
    fn spec_test_vector_fails_under_the_base_mainnet_domain() {
        let (message, _, signature) = spec_vector();
        assert!(matches!(
            check_signature(&message, &usdc_domain(Network::Base), &signature),
            Err(SignatureProblem::WrongSigner(_))
        ));
    }

    #[test]
    fn base_mainnet_domain_separator_matches_the_one_read_on_chain() {
        assert_eq!(
            usdc_domain(Network::Base).separator(),
            b256!("0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f")
        );
    }

    #[test]
    fn typehash_matches_usdc_eip3009() {
        let (message, _, _) = spec_vector();
        assert_eq!(
            message.eip712_type_hash(),
            b256!("0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267")
        );
    }

    #[test]
    fn half_order_constant_is_where_alloy_starts_normalising() {
        let sig = |s: U256| Signature::new(U256::from(1u8), s, false);
        assert_eq!(sig(SECP256K1N_HALF).normalize_s(), None);
        assert!(
            sig(SECP256K1N_HALF + U256::from(1u8))
                .normalize_s()
                .is_some()
        );
    }

    #[test]
    fn malleated_high_s_twin_is_refused() {
        let (message, domain, mut signature) = spec_vector();
        let s = U256::from_be_slice(&signature[32..64]);
        let order = SECP256K1N_HALF * U256::from(2u8) + U256::from(1u8);
        let twin = order - s;
        signature[32..64].copy_from_slice(&twin.to_be_bytes::<32>());
        signature[64] = if signature[64] == 27 { 28 } else { 27 };
        assert_eq!(
            check_signature(&message, &domain, &signature),
            Err(SignatureProblem::HighS)
        );
    }

    #[test]
    fn wrong_length_v_and_zero_scalars_are_malformed() {
        let (message, domain, signature) = spec_vector();
        let check = |sig: &[u8]| check_signature(&message, &domain, sig);
        assert_eq!(check(&signature[..64]), Err(SignatureProblem::Malformed));
        assert_eq!(
            check(&[signature.as_slice(), &[0]].concat()),
            Err(SignatureProblem::Malformed)
        );
        for v in [0u8, 1, 29, 37] {
            let mut sig = signature.clone();
            sig[64] = v;
            assert_eq!(check(&sig), Err(SignatureProblem::Malformed), "v = {v}");
        }
        let mut zero = [0u8; 65];
        zero[64] = 27;
        assert_eq!(check(&zero), Err(SignatureProblem::Malformed));
        assert_eq!(check(&[]), Err(SignatureProblem::Malformed));
    }
}
