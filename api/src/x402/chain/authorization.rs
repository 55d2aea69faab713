//! The signed EIP-3009 authorization inside a payment payload, as `transferWithAuthorization`'s
//! arguments, and the refusal reasons that USDC's revert messages map to.

use super::{IUsdc, USDC};
use crate::x402::{facilitator::SettleRequest, settle::AuthorizationQuery};
use alloy_primitives::{Address, B256, U256};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Authorization {
    pub from: Address,
    pub to: Address,
    pub value: U256,
    pub valid_after: U256,
    pub valid_before: U256,
    pub nonce: B256,
    pub v: u8,
    pub r: B256,
    pub s: B256,
}

impl Authorization {
    /// Reads `/payload/authorization` and `/payload/signature`, and checks that the requirement
    /// asks for USDC on Base paid to `to`: the settler sends only what it was offered.
    pub fn from_request(request: &SettleRequest) -> Result<Self, &'static str> {
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
        // r ‖ s ‖ v; only EOA signatures: USDC's (v, r, s) overload is the one we call.
        let [rs @ .., v] =
            <[u8; 65]>::try_from(signature.as_slice()).map_err(|_| "invalid_signature")?;
        let auth = Self {
            from: address("from")?,
            to: address("to")?,
            value: uint("value")?,
            valid_after: uint("validAfter")?,
            valid_before: uint("validBefore")?,
            nonce,
            v: if v < 27 { v + 27 } else { v },
            r: B256::from_slice(&rs[..32]),
            s: B256::from_slice(&rs[32..]),
        };
        let requirement = &request.payment_requirements;
        let offered = |name: &str| {
            requirement
                .get(name)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Address>().ok())
        };
        if offered("asset").is_some_and(|asset| asset != USDC) {
            return Err("unsupported_asset");
        }
        if offered("payTo").is_some_and(|pay_to| pay_to != auth.to) {
            return Err("recipient_mismatch");
        }
        Ok(auth)
    }

    /// The chain question "did this authorization pay us?", for uses since `since` (unix s).
    pub fn query(&self, since: u64) -> AuthorizationQuery {
        AuthorizationQuery {
            authorizer: self.from,
            nonce: self.nonce,
            to: self.to,
            value: self.value,
            since,
        }
    }

    pub fn call(&self) -> IUsdc::transferWithAuthorizationCall {
        IUsdc::transferWithAuthorizationCall {
            from: self.from,
            to: self.to,
            value: self.value,
            validAfter: self.valid_after,
            validBefore: self.valid_before,
            nonce: self.nonce,
            v: self.v,
            r: self.r,
            s: self.s,
        }
    }
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
            payment_requirements: json!({"asset": USDC.to_string(), "payTo": pay_to}),
        }
    }

    #[test]
    fn reads_the_authorization_and_splits_the_signature() {
        let sig = format!("0x{}{}1c", "11".repeat(32), "22".repeat(32));
        let auth = Authorization::from_request(&request(
            &sig,
            "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
        ))
        .expect("parses");
        assert_eq!(auth.value, U256::from(180_000));
        assert_eq!(
            (auth.v, auth.r, auth.s),
            (28, B256::repeat_byte(0x11), B256::repeat_byte(0x22))
        );
    }

    #[test]
    fn refuses_what_it_was_not_offered_and_malformed_signatures() {
        let sig = format!("0x{}1b", "11".repeat(64));
        let other = "0x0000000000000000000000000000000000000001";
        assert_eq!(
            Authorization::from_request(&request(&sig, other)),
            Err("recipient_mismatch")
        );
        let pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
        assert_eq!(
            Authorization::from_request(&request("0x1234", pay_to)),
            Err("invalid_signature")
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
