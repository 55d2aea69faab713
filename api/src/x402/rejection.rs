//! Why a presented payment was refused: the stable reason codes of `payment_invalid:<reason>`.

use super::{challenge, eip3009::SignatureProblem};
use grove_common::config::Network;

/// Why a payment was refused. `reason()` is the stable code of `payment_invalid:<reason>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PaymentRejection {
    #[error("the payment header could not be decoded: {0}")]
    MalformedHeader(String),
    #[error("{0}")]
    UnsupportedVersion(String),
    #[error("only the \"exact\" scheme is accepted")]
    WrongScheme,
    #[error(
        "payments are accepted on {} only ({}, v1 \"{}\")",
        .0.display_name(), .0.caip2(), .0.v1_name()
    )]
    WrongNetwork(Network),
    #[error("the asset must be USDC on {} ({})", .0.display_name(), .0.usdc_address())]
    WrongAsset(Network),
    #[error("the payment is not addressed to this service's payTo")]
    WrongPayTo,
    #[error("the authorized value must be exactly {0} atomic USDC units")]
    WrongAmount(u64),
    #[error("{field} must be a canonical decimal string: {}", uint_rule(.problem))]
    NonCanonicalInteger {
        field: &'static str,
        problem: UintProblem,
    },
    #[error(
        "accepted.maxTimeoutSeconds must be {}, as offered",
        challenge::OFFERED_MAX_TIMEOUT_SECONDS
    )]
    WrongMaxTimeout,
    #[error("accepted.extra must be {}, as offered", challenge::offered_extra(*.0))]
    WrongExtra(Network),
    #[error("the authorization is not valid yet (validAfter must be before now, as USDC requires)")]
    NotYetValid,
    #[error(
        "the authorization expires too soon to settle (validBefore must be at least now + {}s)",
        challenge::MIN_SECONDS_LEFT
    )]
    Expired,
    #[error("the signature is not a 65-byte ECDSA signature with v = 27 or 28")]
    BadSignature,
    #[error("the signature has a high s value; sign with a low-s (canonical) signature")]
    HighSSignature,
    #[error(
        "the signature was not made by authorization.from under {}",
        domain(*.0)
    )]
    SignerMismatch(Network),
    #[error(
        "the signature is a smart wallet's (ERC-1271 / ERC-6492), and this server has no chain connection to check it; pay with an EOA's 65-byte signature"
    )]
    SmartWalletNeedsChain,
    #[error(
        "the signature ends with the ERC-6492 suffix but is not abi.encode(address factory, bytes factoryCalldata, bytes signature) followed by it"
    )]
    MalformedErc6492,
    #[error(
        "authorization.from has no contract code that answers ERC-1271, and the signature carries no ERC-6492 deployment that creates it"
    )]
    SmartWalletNotDeployed,
    #[error(
        "the payer's wallet (authorization.from) did not accept the signature: ERC-1271 isValidSignature over the digest under {} did not answer 0x1626ba7e",
        domain(*.0)
    )]
    SmartWalletRefused(Network),
}

impl PaymentRejection {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MalformedHeader(_) => "malformed_header",
            Self::UnsupportedVersion(_) => "unsupported_version",
            Self::WrongScheme => "wrong_scheme",
            Self::WrongNetwork(_) => "wrong_network",
            Self::WrongAsset(_) => "wrong_asset",
            Self::WrongPayTo => "wrong_pay_to",
            Self::WrongAmount(_) => "wrong_amount",
            Self::NonCanonicalInteger { problem, .. } => match problem {
                UintProblem::NotDecimal => "integer_not_decimal",
                UintProblem::LeadingZero => "integer_leading_zero",
                UintProblem::TooLarge => "integer_too_large",
            },
            Self::WrongMaxTimeout => "wrong_max_timeout",
            Self::WrongExtra(_) => "wrong_extra",
            Self::NotYetValid => "not_yet_valid",
            Self::Expired => "expired",
            Self::BadSignature => "bad_signature",
            Self::HighSSignature => "high_s_signature",
            Self::SignerMismatch(_) => "signer_mismatch",
            Self::SmartWalletNeedsChain => "smart_wallet_needs_chain",
            Self::MalformedErc6492 => "bad_erc6492_signature",
            Self::SmartWalletNotDeployed => "smart_wallet_not_deployed",
            Self::SmartWalletRefused(_) => "smart_wallet_signature_invalid",
        }
    }

    /// Human text for logs and clients; it never repeats the header back.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The refusal of a signature checked under USDC's domain on `network`.
    pub(crate) fn of_signature(problem: SignatureProblem, network: Network) -> Self {
        match problem {
            SignatureProblem::Malformed => Self::BadSignature,
            SignatureProblem::HighS => Self::HighSSignature,
            SignatureProblem::WrongSigner(_) => Self::SignerMismatch(network),
        }
    }
}

/// USDC's EIP-712 domain on `network`, as a refusal names it.
fn domain(network: Network) -> String {
    format!(
        "USDC's EIP-712 domain on {} (name \"{}\", version \"{}\", chainId {}, verifyingContract {})",
        network.display_name(),
        network.usdc_domain_name(),
        network.usdc_domain_version(),
        network.chain_id(),
        network.usdc_address()
    )
}

/// The rule a non-canonical integer broke, for the refusal's message.
fn uint_rule(problem: &UintProblem) -> &'static str {
    match problem {
        UintProblem::NotDecimal => "ASCII digits only (no sign, space, hex or exponent)",
        UintProblem::LeadingZero => "no leading zeros",
        UintProblem::TooLarge => "at most 2^256 - 1",
    }
}

/// Why an integer string is not the one canonical spelling of a uint256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UintProblem {
    /// Empty, or anything but ASCII digits: a sign, whitespace, `0x`, an exponent, a point.
    NotDecimal,
    /// `"0180000"`: one number, two spellings, and parsers that disagree on the second (octal).
    LeadingZero,
    /// Above 2^256 - 1: what USDC's `uint256` cannot hold.
    TooLarge,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_stable_snake_case() {
        assert_eq!(
            PaymentRejection::HighSSignature.reason(),
            "high_s_signature"
        );
        assert_eq!(PaymentRejection::WrongAmount(1).reason(), "wrong_amount");
        assert!(PaymentRejection::Expired.message().contains("now + 6s"));
        let leading = PaymentRejection::NonCanonicalInteger {
            field: "authorization.value",
            problem: UintProblem::LeadingZero,
        };
        assert_eq!(leading.reason(), "integer_leading_zero");
        assert_eq!(
            leading.message(),
            "authorization.value must be a canonical decimal string: no leading zeros"
        );
        assert!(PaymentRejection::WrongMaxTimeout.message().contains("300"));
        assert!(
            PaymentRejection::WrongExtra(Network::Base)
                .message()
                .contains(r#"{"name":"USD Coin","version":"2"}"#)
        );
        let sepolia = PaymentRejection::SignerMismatch(Network::BaseSepolia).message();
        assert!(
            sepolia.contains(r#"name "USDC", version "2", chainId 84532"#),
            "{sepolia}"
        );
        assert!(
            PaymentRejection::WrongNetwork(Network::BaseSepolia)
                .message()
                .contains("Base Sepolia only (eip155:84532")
        );
    }
}
