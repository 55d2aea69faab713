//! Decoding and local verification of a payment header (CONTRACT 3, "Payment").
//!
//! `PAYMENT-SIGNATURE` (v2) is read first, else `X-PAYMENT` (v1); both carry base64 JSON. Every
//! check here is local and runs before any money moves: a payment that passes is well formed,
//! for this price and this recipient, inside its time window and signed by `authorization.from`.
//! What needs a chain (balance, nonce already used on chain) is the facilitator's job.

use super::{
    challenge,
    eip3009::{self, SignatureProblem, TransferWithAuthorization},
    payment_header::{
        PayloadV1, PayloadV2, decode, field, malformed, parse_address, parse_uint, payment_header,
    },
};
use alloy_primitives::{Address, B256, U256, hex};
use axum::http::HeaderMap;
use grove_common::x402;
use serde::Deserialize;
use serde_json::Value;
use std::str::FromStr;

pub use super::payment_header::UintProblem;

/// What this call must be paid with. Network, asset and EIP-712 domain are constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub pay_to: Address,
    pub amount_atomic: u64,
}

/// A payment that passed every local check.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedPayment {
    /// 2 for `PAYMENT-SIGNATURE`, 1 for `X-PAYMENT`.
    pub version: u8,
    /// The recovered signer, equal to `authorization.from`.
    pub payer: Address,
    pub nonce: B256,
    pub amount_atomic: u64,
    /// Unix seconds; saturated to `u64::MAX` for absurdly far deadlines.
    pub valid_before: u64,
    /// The decoded JSON exactly as the client sent it: the facilitator's `paymentPayload`.
    pub payload: Value,
    /// Lowercase header name the payment came in (`payment-signature` or `x-payment`).
    pub header_name: &'static str,
}

/// Why a payment header was refused. `reason()` is the stable code of `payment_invalid:<reason>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PaymentRejection {
    #[error("the payment header could not be decoded: {0}")]
    MalformedHeader(String),
    #[error("{0}")]
    UnsupportedVersion(String),
    #[error("only the \"exact\" scheme is accepted")]
    WrongScheme,
    #[error("payments are accepted on Base mainnet only (eip155:8453, v1 \"base\")")]
    WrongNetwork,
    #[error("the asset must be USDC on Base ({})", x402::USDC_ADDRESS)]
    WrongAsset,
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
    #[error("accepted.extra must be {}, as offered", challenge::offered_extra())]
    WrongExtra,
    #[error("the authorization is not valid yet (validAfter must be before now, as USDC requires)")]
    NotYetValid,
    #[error(
        "the authorization expires too soon to settle (validBefore must be at least now + {MIN_SECONDS_LEFT}s)"
    )]
    Expired,
    #[error("the signature is not a 65-byte ECDSA signature with v = 27 or 28")]
    BadSignature,
    #[error("the signature has a high s value; sign with a low-s (canonical) signature")]
    HighSSignature,
    #[error(
        "the signature was not made by authorization.from under the USDC (\"USD Coin\", version 2, chain 8453) EIP-712 domain"
    )]
    SignerMismatch,
}

impl PaymentRejection {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MalformedHeader(_) => "malformed_header",
            Self::UnsupportedVersion(_) => "unsupported_version",
            Self::WrongScheme => "wrong_scheme",
            Self::WrongNetwork => "wrong_network",
            Self::WrongAsset => "wrong_asset",
            Self::WrongPayTo => "wrong_pay_to",
            Self::WrongAmount(_) => "wrong_amount",
            Self::NonCanonicalInteger { problem, .. } => match problem {
                UintProblem::NotDecimal => "integer_not_decimal",
                UintProblem::LeadingZero => "integer_leading_zero",
                UintProblem::TooLarge => "integer_too_large",
            },
            Self::WrongMaxTimeout => "wrong_max_timeout",
            Self::WrongExtra => "wrong_extra",
            Self::NotYetValid => "not_yet_valid",
            Self::Expired => "expired",
            Self::BadSignature => "bad_signature",
            Self::HighSSignature => "high_s_signature",
            Self::SignerMismatch => "signer_mismatch",
        }
    }

    /// Human text for logs and clients; it never repeats the header back.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// The rule a non-canonical integer broke, for the refusal's message.
fn uint_rule(problem: &UintProblem) -> &'static str {
    match problem {
        UintProblem::NotDecimal => "ASCII digits only (no sign, space, hex or exponent)",
        UintProblem::LeadingZero => "no leading zeros",
        UintProblem::TooLarge => "at most 2^256 - 1",
    }
}

/// A uint256 field in its one canonical spelling, or the refusal naming the field.
fn uint(field: &'static str, s: &str) -> Result<U256, PaymentRejection> {
    parse_uint(s).map_err(|problem| PaymentRejection::NonCanonicalInteger { field, problem })
}

/// Settlement needs a few Base blocks (2 s each) before `validBefore`, or the transfer reverts
/// as expired after we did the work.
pub const MIN_SECONDS_LEFT: u64 = 6;

/// Verifies the payment header of a request. `Ok(None)`: the request carries none.
pub fn verify(
    headers: &HeaderMap,
    expected: &Expected,
    now_unix: u64,
) -> Result<Option<VerifiedPayment>, PaymentRejection> {
    let Some((header_name, version, raw)) = payment_header(headers)? else {
        return Ok(None);
    };
    let payload = decode(raw)?;
    let found = payload.get("x402Version").and_then(Value::as_u64);
    if found != Some(u64::from(version)) {
        return Err(PaymentRejection::UnsupportedVersion(format!(
            "the {header_name} header carries x402Version {version}, found {}",
            found.map_or_else(|| "none".to_owned(), |v| v.to_string())
        )));
    }

    let exact = if version == 2 {
        let p = PayloadV2::deserialize(&payload).map_err(malformed)?;
        check_scheme_and_network(&p.accepted.scheme, &p.accepted.network, x402::NETWORK_V2)?;
        // v2 binds the chosen requirement into the payload: it must be the one we offered.
        if parse_address(&p.accepted.asset) != Some(eip3009::USDC) {
            return Err(PaymentRejection::WrongAsset);
        }
        if parse_address(&p.accepted.pay_to) != Some(expected.pay_to) {
            return Err(PaymentRejection::WrongPayTo);
        }
        if uint("accepted.amount", &p.accepted.amount)? != U256::from(expected.amount_atomic) {
            return Err(PaymentRejection::WrongAmount(expected.amount_atomic));
        }
        // Not covered by the signature, but a facilitator may read them from the payload: the
        // client must have accepted exactly our terms, not a longer timeout or another domain.
        if p.accepted.max_timeout_seconds.as_u64() != Some(challenge::OFFERED_MAX_TIMEOUT_SECONDS) {
            return Err(PaymentRejection::WrongMaxTimeout);
        }
        if p.accepted.extra != challenge::offered_extra() {
            return Err(PaymentRejection::WrongExtra);
        }
        p.payload
    } else {
        let p = PayloadV1::deserialize(&payload).map_err(malformed)?;
        check_scheme_and_network(&p.scheme, &p.network, x402::NETWORK_V1)?;
        p.payload
    };

    let a = &exact.authorization;
    let message = TransferWithAuthorization {
        from: parse_address(&a.from).ok_or_else(|| field("authorization.from"))?,
        to: parse_address(&a.to).ok_or_else(|| field("authorization.to"))?,
        value: uint("authorization.value", &a.value)?,
        validAfter: uint("authorization.validAfter", &a.valid_after)?,
        validBefore: uint("authorization.validBefore", &a.valid_before)?,
        nonce: B256::from_str(&a.nonce).map_err(|_| field("authorization.nonce"))?,
    };
    if message.to != expected.pay_to {
        return Err(PaymentRejection::WrongPayTo);
    }
    // v2 "exact" requires equality; v1 allowed overpaying, but a price is a price.
    if message.value != U256::from(expected.amount_atomic) {
        return Err(PaymentRejection::WrongAmount(expected.amount_atomic));
    }
    // USDC's rule is `block.timestamp > validAfter`: at `validAfter` itself the transfer reverts.
    if message.validAfter >= U256::from(now_unix) {
        return Err(PaymentRejection::NotYetValid);
    }
    if message.validBefore < U256::from(now_unix) + U256::from(MIN_SECONDS_LEFT) {
        return Err(PaymentRejection::Expired);
    }

    let signature = hex::decode(&exact.signature).map_err(|_| PaymentRejection::BadSignature)?;
    eip3009::check_signature(&message, &eip3009::usdc_base_domain(), &signature).map_err(
        |problem| match problem {
            SignatureProblem::Malformed => PaymentRejection::BadSignature,
            SignatureProblem::HighS => PaymentRejection::HighSSignature,
            SignatureProblem::WrongSigner(_) => PaymentRejection::SignerMismatch,
        },
    )?;

    Ok(Some(VerifiedPayment {
        version,
        payer: message.from,
        nonce: message.nonce,
        amount_atomic: expected.amount_atomic,
        valid_before: message.validBefore.saturating_to(),
        payload,
        header_name,
    }))
}

fn check_scheme_and_network(
    scheme: &str,
    network: &str,
    our_network: &str,
) -> Result<(), PaymentRejection> {
    if scheme != x402::SCHEME_EXACT {
        return Err(PaymentRejection::WrongScheme);
    }
    if network != our_network {
        return Err(PaymentRejection::WrongNetwork);
    }
    Ok(())
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
            PaymentRejection::WrongExtra
                .message()
                .contains(r#"{"name":"USD Coin","version":"2"}"#)
        );
    }
}
