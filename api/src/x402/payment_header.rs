//! Finding and decoding the payment header: which header, base64 in any spelling, the JSON
//! wire shapes of the exact/EVM payload, and strict parsers for its fields. What the values
//! must be is `payment::verify`'s business.

use super::payment::PaymentRejection;
use alloy_primitives::{Address, U256};
use axum::http::HeaderMap;
use base64::{
    Engine, alphabet,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
};
use grove_common::x402::headers;
use serde::Deserialize;
use serde_json::Value;
use std::str::FromStr;

/// Far above any honest payload (ours echo the bazaar extension, a few KiB), far below what it
/// would cost to parse.
const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The spec says standard padded base64; some clients send URL-safe or unpadded, which is
/// unambiguous, so we take all four.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PayloadV2 {
    pub(super) accepted: AcceptedV2,
    pub(super) payload: ExactPayload,
}

/// The requirement the client says it chose; other fields (extra, maxTimeoutSeconds) do not
/// change what is signed, so they are left to the facilitator.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AcceptedV2 {
    pub(super) scheme: String,
    pub(super) network: String,
    pub(super) amount: String,
    pub(super) asset: String,
    pub(super) pay_to: String,
}

#[derive(Deserialize)]
pub(super) struct PayloadV1 {
    pub(super) scheme: String,
    pub(super) network: String,
    pub(super) payload: ExactPayload,
}

#[derive(Deserialize)]
pub(super) struct ExactPayload {
    pub(super) signature: String,
    pub(super) authorization: AuthorizationWire,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuthorizationWire {
    pub(super) from: String,
    pub(super) to: String,
    pub(super) value: String,
    pub(super) valid_after: String,
    pub(super) valid_before: String,
    pub(super) nonce: String,
}

/// The header to read and the version it implies. Two copies of one header are ambiguous
/// (which one would the facilitator see?), so they are refused rather than guessed.
pub(super) fn payment_header(
    headers: &HeaderMap,
) -> Result<Option<(&'static str, u8, &str)>, PaymentRejection> {
    for (name, version) in [(headers::PAYMENT_SIGNATURE, 2), (headers::X_PAYMENT, 1)] {
        let mut values = headers.get_all(name).iter();
        let Some(value) = values.next() else { continue };
        if values.next().is_some() {
            return Err(malformed(format!("more than one {name} header")));
        }
        let raw = value
            .to_str()
            .map_err(|_| malformed(format!("{name} is not ASCII")))?;
        return Ok(Some((name, version, raw)));
    }
    Ok(None)
}

pub(super) fn decode(raw: &str) -> Result<Value, PaymentRejection> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_HEADER_BYTES {
        return Err(malformed(format!(
            "expected 1 to {MAX_HEADER_BYTES} bytes of base64"
        )));
    }
    let bytes = STANDARD_ANY_PAD
        .decode(raw)
        .or_else(|_| URL_SAFE_ANY_PAD.decode(raw))
        .map_err(|_| malformed("not base64"))?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| malformed("base64 of something not JSON"))?;
    if !value.is_object() {
        return Err(malformed("the JSON is not an object"));
    }
    Ok(value)
}

/// `0x` + 40 hex digits, any case: addresses are compared as values, never as strings.
pub(super) fn parse_address(s: &str) -> Option<Address> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if digits.len() != 40 {
        return None;
    }
    Address::from_str(digits).ok()
}

/// A uint256 as x402 writes it: a plain decimal string (no sign, no spaces, no exponent).
pub(super) fn parse_uint(s: &str) -> Option<U256> {
    if s.is_empty() || s.len() > 78 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    U256::from_str_radix(s, 10).ok()
}

pub(super) fn malformed(why: impl ToString) -> PaymentRejection {
    PaymentRejection::MalformedHeader(why.to_string())
}

pub(super) fn field(name: &str) -> PaymentRejection {
    malformed(format!("{name} is not in its expected format"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x402::eip3009;
    use grove_common::x402;

    #[test]
    fn uints_are_plain_decimal_strings() {
        assert_eq!(parse_uint("180000"), Some(U256::from(180_000u64)));
        for bad in ["", "-1", "+1", " 1", "1e6", "0x10", "1_000", "١"] {
            assert_eq!(parse_uint(bad), None, "{bad:?}");
        }
        assert_eq!(parse_uint(&"9".repeat(79)), None);
        assert_eq!(
            parse_uint(&"9".repeat(78)),
            None,
            "above 2^256 does not parse"
        );
    }

    #[test]
    fn addresses_need_the_prefix_and_ignore_case() {
        let lower = parse_address("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913");
        assert_eq!(lower, Some(eip3009::USDC));
        assert_eq!(
            parse_address(&x402::USDC_ADDRESS.to_uppercase().replacen("0X", "0x", 1)),
            lower
        );
        assert_eq!(
            parse_address("833589fcd6edb6e08f4c7c32d4f71b54bda02913"),
            None
        );
        assert_eq!(
            parse_address("0x833589fcd6edb6e08f4c7c32d4f71b54bda029"),
            None
        );
    }

    #[test]
    fn base64_in_all_four_spellings_decodes() {
        // Standard base64 of this has '+', '/' and '=' padding: each spelling differs.
        let json = br#"{"a":"???>>>"}"#;
        for engine in [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::STANDARD_NO_PAD,
            base64::engine::general_purpose::URL_SAFE,
            base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            let encoded = engine.encode(json);
            assert_eq!(
                decode(&encoded).map(|v| v["a"].clone()),
                Ok("???>>>".into())
            );
        }
    }
}
