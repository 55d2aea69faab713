//! A payment as a client presents it, before any check: found in a header (base64 in any
//! spelling) or handed over as JSON by another transport; the JSON wire shapes of the exact/EVM
//! payload, and strict parsers for its fields. What the values must be is `payment`'s business.

use super::rejection::{PaymentRejection, UintProblem};
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

/// The requirement the client says it chose. `maxTimeoutSeconds` and `extra` are kept as raw
/// JSON (absent: `null`) because they are compared with the offer as values, not parsed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AcceptedV2 {
    pub(super) scheme: String,
    pub(super) network: String,
    pub(super) amount: String,
    pub(super) asset: String,
    pub(super) pay_to: String,
    #[serde(default)]
    pub(super) max_timeout_seconds: Value,
    #[serde(default)]
    pub(super) extra: Value,
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

/// A payment as presented: its decoded JSON, the protocol version its carrier implies, and the
/// carrier's name for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct PaymentPayload {
    /// 2 for `PAYMENT-SIGNATURE` (and MCP's `_meta["x402/payment"]`), 1 for `X-PAYMENT`.
    pub version: u8,
    /// The payload object, exactly as sent: what the facilitator gets as `paymentPayload`.
    pub json: Value,
    /// Where it came from (`payment-signature header`, ...), for messages.
    pub carrier: &'static str,
}

impl PaymentPayload {
    /// The payment of an HTTP request: `PAYMENT-SIGNATURE` (v2) first, else `X-PAYMENT` (v1).
    /// Two copies of one header are ambiguous (which one would the facilitator see?), so they
    /// are refused rather than guessed. `Ok(None)`: the request carries none.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, PaymentRejection> {
        const CARRIERS: [(&str, u8, &str); 2] = [
            (headers::PAYMENT_SIGNATURE, 2, "payment-signature header"),
            (headers::X_PAYMENT, 1, "x-payment header"),
        ];
        for (name, version, carrier) in CARRIERS {
            let mut values = headers.get_all(name).iter();
            let Some(value) = values.next() else { continue };
            if values.next().is_some() {
                return Err(malformed(format!("more than one {name} header")));
            }
            let raw = value
                .to_str()
                .map_err(|_| malformed(format!("{name} is not ASCII")))?;
            return Ok(Some(Self {
                version,
                json: decode(raw)?,
                carrier,
            }));
        }
        Ok(None)
    }

    /// A v2 payload another transport carried as JSON (MCP's `_meta["x402/payment"]`).
    pub fn from_json(json: Value, carrier: &'static str) -> Result<Self, PaymentRejection> {
        if !json.is_object() {
            return Err(malformed(format!("the {carrier} is not a JSON object")));
        }
        Ok(Self {
            version: 2,
            json,
            carrier,
        })
    }
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

/// A uint256 as x402 writes it: ASCII decimal digits, no leading zero (`"0"` itself excepted),
/// within 2^256 - 1. The signature covers the number, not its spelling, so any other spelling
/// would let the facilitator see a string we did not check.
pub(super) fn parse_uint(s: &str) -> Result<U256, UintProblem> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UintProblem::NotDecimal);
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(UintProblem::LeadingZero);
    }
    // 2^256 - 1 has 78 digits; longer strings need not be parsed to be refused.
    if s.len() > 78 {
        return Err(UintProblem::TooLarge);
    }
    U256::from_str_radix(s, 10).map_err(|_| UintProblem::TooLarge)
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

    #[test]
    fn uints_are_canonical_decimal_strings() {
        assert_eq!(parse_uint("180000"), Ok(U256::from(180_000u64)));
        assert_eq!(parse_uint("0"), Ok(U256::ZERO));
        assert_eq!(parse_uint(&U256::MAX.to_string()), Ok(U256::MAX));
        #[rustfmt::skip]
        let not_decimal = [
            "", "-1", "+1", " 1", "1 ", "1\n", "1e6", "1E6", "1.0", "0x10", "0X10", "1_000", "١", "０",
        ];
        for bad in not_decimal {
            assert_eq!(parse_uint(bad), Err(UintProblem::NotDecimal), "{bad:?}");
        }
        for bad in ["00", "0180000", "00000000000000000000000000000000001"] {
            assert_eq!(parse_uint(bad), Err(UintProblem::LeadingZero), "{bad:?}");
        }
        // 2^256 itself, then longer numbers.
        let two_to_256 =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        for bad in [two_to_256.to_owned(), "9".repeat(78), "1".repeat(200)] {
            assert_eq!(parse_uint(&bad), Err(UintProblem::TooLarge), "{bad:.20}");
        }
    }

    #[test]
    fn addresses_need_the_prefix_and_ignore_case() {
        let lower = parse_address("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913");
        let base = grove_common::config::Network::Base;
        assert_eq!(lower, Some(base.usdc()));
        assert_eq!(
            parse_address(&base.usdc_address().to_uppercase().replacen("0X", "0x", 1)),
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
