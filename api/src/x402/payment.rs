//! Local verification of a payment (CONTRACT 3, "Payment"), whatever carried it: every check
//! here runs before any money moves. A payment that passes is well formed, for this price and
//! this recipient, inside its time window and signed by `authorization.from`. A smart wallet's
//! signature is checked on chain (`smart_wallet::verify_payload`); what else needs a chain
//! (balance, nonce already used on chain) is the settler's job.

use super::{
    challenge,
    eip3009::TransferWithAuthorization,
    facilitator::SettleRequest,
    payload::{PayloadV1, PayloadV2, PaymentPayload, field, malformed, parse_address, parse_uint},
    rejection::PaymentRejection,
    signature::Signed,
};
use alloy_primitives::{Address, B256, U256, hex};
use axum::http::HeaderMap;
use grove_common::{config::Network, x402};
use serde::Deserialize;
use serde_json::Value;
use std::str::FromStr;

/// What this call must be paid with. Asset and EIP-712 domain are USDC's on `network`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub network: Network,
    pub pay_to: Address,
    pub amount_atomic: u64,
}

/// A payment that passed every local check (and, for a smart wallet's signature, the chain's).
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedPayment {
    /// The protocol version: 2 (`PAYMENT-SIGNATURE`, MCP `_meta`), 1 (`X-PAYMENT`).
    pub version: u8,
    /// The recovered signer, equal to `authorization.from`.
    pub payer: Address,
    pub nonce: B256,
    pub amount_atomic: u64,
    /// Unix seconds; saturated to `u64::MAX` for absurdly far deadlines.
    pub valid_before: u64,
    /// The decoded JSON exactly as the client sent it: the facilitator's `paymentPayload`.
    pub payload: Value,
}

impl SettleRequest {
    /// The request for a locally verified payment: its own payload, in its own version. The
    /// payload moves into the request, which is dropped once settled; the payment keeps what its
    /// answer needs (a copy of the payload was held through every call's wait, issue 31).
    pub fn for_payment(payment: &mut VerifiedPayment, payment_requirements: Value) -> Self {
        Self {
            x402_version: payment.version,
            payment_payload: std::mem::take(&mut payment.payload),
            payment_requirements,
        }
    }
}

/// A uint256 field in its one canonical spelling, or the refusal naming the field.
fn uint(field: &'static str, s: &str) -> Result<U256, PaymentRejection> {
    parse_uint(s).map_err(|problem| PaymentRejection::NonCanonicalInteger { field, problem })
}

pub use super::challenge::MIN_SECONDS_LEFT;

/// Verifies the payment header of a request (`PAYMENT-SIGNATURE`, else `X-PAYMENT`).
/// `Ok(None)`: the request carries none.
pub fn verify(
    headers: &HeaderMap,
    expected: &Expected,
    now_unix: u64,
) -> Result<Option<VerifiedPayment>, PaymentRejection> {
    PaymentPayload::from_headers(headers)?
        .map(|payload| verify_payload(payload, expected, now_unix))
        .transpose()
}

/// Verifies a payment as its carrier presented it (decoded from a header, or taken from MCP's
/// `_meta["x402/payment"]`), without a chain: a smart wallet's signature is refused
/// (`smart_wallet_needs_chain`; `smart_wallet::verify_payload` asks the chain).
pub fn verify_payload(
    presented: PaymentPayload,
    expected: &Expected,
    now_unix: u64,
) -> Result<VerifiedPayment, PaymentRejection> {
    let (payment, signed) = check(presented, expected, now_unix)?;
    signed.without_chain()?;
    Ok(payment)
}

/// Every local check, and how the signature is to be checked: here (an EOA's), or by the
/// payer's wallet on chain.
pub(crate) fn check(
    presented: PaymentPayload,
    expected: &Expected,
    now_unix: u64,
) -> Result<(VerifiedPayment, Signed), PaymentRejection> {
    let PaymentPayload {
        version,
        json: payload,
        carrier,
    } = presented;
    let found = payload.get("x402Version").and_then(Value::as_u64);
    if found != Some(u64::from(version)) {
        return Err(PaymentRejection::UnsupportedVersion(format!(
            "the {carrier} carries x402Version {version}, found {}",
            found.map_or_else(|| "none".to_owned(), |v| v.to_string())
        )));
    }

    let exact = if version == 2 {
        let p = PayloadV2::deserialize(&payload).map_err(malformed)?;
        let network = expected.network;
        check_scheme_and_network(
            &p.accepted.scheme,
            &p.accepted.network,
            network.caip2(),
            network,
        )?;
        // v2 binds the chosen requirement into the payload: it must be the one we offered.
        if parse_address(&p.accepted.asset) != Some(network.usdc()) {
            return Err(PaymentRejection::WrongAsset(network));
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
        if p.accepted.extra != challenge::offered_extra(network) {
            return Err(PaymentRejection::WrongExtra(network));
        }
        p.payload
    } else {
        let p = PayloadV1::deserialize(&payload).map_err(malformed)?;
        let network = expected.network;
        check_scheme_and_network(&p.scheme, &p.network, network.v1_name(), network)?;
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
    let signed = Signed::classify(&message, &signature, expected.network)?;

    let payment = VerifiedPayment {
        version,
        payer: message.from,
        nonce: message.nonce,
        amount_atomic: expected.amount_atomic,
        valid_before: message.validBefore.saturating_to(),
        payload,
    };
    Ok((payment, signed))
}

/// `ours` is `network`'s name in the payment's version.
fn check_scheme_and_network(
    scheme: &str,
    named: &str,
    ours: &str,
    network: Network,
) -> Result<(), PaymentRejection> {
    if scheme != x402::SCHEME_EXACT {
        return Err(PaymentRejection::WrongScheme);
    }
    if named != ours {
        return Err(PaymentRejection::WrongNetwork(network));
    }
    Ok(())
}
