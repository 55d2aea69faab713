//! Builds the 402 challenge (CONTRACT 3): the v2 `PaymentRequired` in the `PAYMENT-REQUIRED`
//! header (base64, standard alphabet, padded) and the v1 `PaymentRequirementsResponse` as body.

use axum::{
    Json,
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use grove_common::{
    config::{Config, Network},
    money::UsdcAmount,
    x402::{
        self, PaymentRequiredV2, PaymentRequirementsResponseV1, PaymentRequirementsV1,
        PaymentRequirementsV2, ResourceInfo,
    },
};
use serde_json::{Value, json};

/// What is being sold on one paid route, as the 402 describes it.
pub struct Offer<'a> {
    pub path: String,
    pub description: String,
    pub price: UsdcAmount,
    /// Published request schema (v1 `outputSchema.input.bodyFields` takes its properties).
    pub request_schema: &'a Value,
    pub request_schema_path: String,
    pub response_schema_path: String,
    /// A minimal valid body, shown to discovery indexers.
    pub example_body: Value,
}

/// A rendered challenge: ready to send as a 402.
#[derive(Debug)]
pub struct Challenge {
    pub error: String,
    pub header: String,
    pub body: PaymentRequirementsResponseV1,
    /// The v2 requirements we offered (what a facilitator settles a v2 payment against).
    pub v2: PaymentRequiredV2,
}

/// Error codes of the 402 `error` field (CONTRACT 5).
pub mod codes {
    pub const PAYMENT_REQUIRED: &str = "payment_required";
    pub const PAYMENT_ALREADY_USED: &str = "payment_already_used";
    pub fn payment_invalid(reason: &str) -> String {
        format!("payment_invalid:{reason}")
    }
    pub fn settlement_failed(reason: &str) -> String {
        format!("settlement_failed:{reason}")
    }
    /// The error of an unpaid call whose settlement was not processed through no fault of the
    /// payer's: answered 503, never 402.
    pub const SETTLEMENT_UNAVAILABLE: &str = "settlement_unavailable:";
}

/// Settlement needs a few Base blocks (2 s each) before `validBefore`, or the transfer reverts
/// as expired after we did the work: an authorization must leave at least this long.
pub const MIN_SECONDS_LEFT: u64 = 6;

/// `maxTimeoutSeconds` of every requirement we offer; a v2 payment's `accepted` must echo it.
pub const OFFERED_MAX_TIMEOUT_SECONDS: u64 = x402::MAX_TIMEOUT_SECONDS;

/// `extra` of every requirement we offer (the EIP-712 domain of USDC on `network`); a v2
/// payment's `accepted` must echo it.
pub fn offered_extra(network: Network) -> Value {
    json!({"name": network.usdc_domain_name(), "version": network.usdc_domain_version()})
}

/// The challenge for `offer`, paying `pay_to`, with `error` as its code.
pub fn build(config: &Config, pay_to: &str, offer: &Offer<'_>, error: &str) -> Challenge {
    let offered = accepts_v2(config.network, pay_to, offer);
    let v2 = PaymentRequiredV2 {
        x402_version: 2,
        error: error.to_owned(),
        resource: ResourceInfo {
            url: config.absolute(&offer.path),
            description: description(config, offer),
            mime_type: "application/json".into(),
        },
        accepts: vec![offered],
        extensions: json!({ "bazaar": bazaar(config, offer) }),
    };
    let v1 = PaymentRequirementsResponseV1 {
        x402_version: 1,
        error: error.to_owned(),
        accepts: vec![accepts_v1(config, pay_to, offer)],
    };
    // Serialising these plain structs cannot fail; fall back to an empty header rather than panic.
    let header = STANDARD.encode(serde_json::to_vec(&v2).unwrap_or_default());
    Challenge {
        error: error.to_owned(),
        header,
        body: v1,
        v2,
    }
}

/// The one requirement `build` offers, in `x402_version` only, as the facilitator's
/// `paymentRequirements`: what a paid call settles against, without the rest of a 402.
pub fn requirements(config: &Config, pay_to: &str, offer: &Offer<'_>, x402_version: u8) -> Value {
    let value = if x402_version == 1 {
        serde_json::to_value(accepts_v1(config, pay_to, offer))
    } else {
        serde_json::to_value(accepts_v2(config.network, pay_to, offer))
    };
    // Plain structs of strings and numbers always serialise; Null would be refused downstream.
    value.unwrap_or(Value::Null)
}

fn description(config: &Config, offer: &Offer<'_>) -> String {
    let mut description = offer.description.clone();
    if config.settles_locally() {
        // CONTRACT 3: the development default says so in the resource description.
        description.push_str(" [development: payments are verified locally and not settled]");
    }
    description
}

fn accepts_v2(network: Network, pay_to: &str, offer: &Offer<'_>) -> PaymentRequirementsV2 {
    PaymentRequirementsV2 {
        scheme: x402::SCHEME_EXACT.into(),
        network: network.caip2().into(),
        amount: offer.price.atomic_string(),
        asset: network.usdc_address().into(),
        pay_to: pay_to.to_owned(),
        max_timeout_seconds: OFFERED_MAX_TIMEOUT_SECONDS,
        extra: offered_extra(network),
    }
}

fn accepts_v1(config: &Config, pay_to: &str, offer: &Offer<'_>) -> PaymentRequirementsV1 {
    PaymentRequirementsV1 {
        scheme: x402::SCHEME_EXACT.into(),
        network: config.network.v1_name().into(),
        max_amount_required: offer.price.atomic_string(),
        resource: config.absolute(&offer.path),
        description: description(config, offer),
        mime_type: "application/json".into(),
        pay_to: pay_to.to_owned(),
        max_timeout_seconds: OFFERED_MAX_TIMEOUT_SECONDS,
        asset: config.network.usdc_address().into(),
        extra: offered_extra(config.network),
        output_schema: json!({
            "input": {
                "type": "http",
                "method": "POST",
                "discoverable": true,
                "bodyType": "json",
                "bodyFields": offer.request_schema.get("properties").cloned().unwrap_or(Value::Null),
            },
            "output": { "$ref": config.absolute(&offer.response_schema_path) },
        }),
    }
}

/// The v2 bazaar discovery extension: `info` describes the call; `schema` validates `info`.
/// Schemas are referenced by URL, not inlined, to keep the header small for proxies.
fn bazaar(config: &Config, offer: &Offer<'_>) -> Value {
    json!({
        "info": {
            "input": {
                "type": "http",
                "method": "POST",
                "bodyType": "json",
                "body": offer.example_body,
            },
            "output": { "type": "json" },
        },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["input"],
            "properties": {
                "input": {
                    "type": "object",
                    "required": ["type", "method", "bodyType", "body"],
                    "properties": {
                        "type": {"const": "http"},
                        "method": {"const": "POST"},
                        "bodyType": {"const": "json"},
                        "body": {"$ref": config.absolute(&offer.request_schema_path)},
                    },
                },
                "output": {"type": "object"},
            },
        },
    })
}

impl IntoResponse for Challenge {
    fn into_response(self) -> Response {
        let mut response = (StatusCode::PAYMENT_REQUIRED, Json(self.body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&self.header) {
            response
                .headers_mut()
                .insert(x402::headers::PAYMENT_REQUIRED, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::money::UsdcAmount;

    /// A paid call settles against `requirements`, built without the rest of the 402: it must be
    /// exactly the requirement the 402 offered, in either version, in development and not.
    #[test]
    fn the_requirements_settled_against_are_the_ones_the_challenge_offers() {
        let schema = json!({"type": "object", "properties": {"messages": {"type": "array"}}});
        let offer = Offer {
            path: "/api/v1/agents/mary/call".into(),
            description: "Coaching".into(),
            price: UsdcAmount::from_atomic(180_000),
            request_schema: &schema,
            request_schema_path: "/schemas/request.json".into(),
            response_schema_path: "/schemas/response.json".into(),
            example_body: json!({"messages": []}),
        };
        let pay_to = "0x1111111111111111111111111111111111111111";
        let facilitated = [("X402_FACILITATOR_URL", "http://127.0.0.1:9")];
        let sepolia = [("X402_NETWORK", "base-sepolia")];
        for vars in [&[][..], &facilitated[..], &sepolia[..]] {
            let map = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let config = Config::from_map(&map).expect("config");
            let challenge = build(&config, pay_to, &offer, "payment_required");
            for version in [1, 2] {
                let offered = crate::x402::facilitator::requirements_for(
                    version,
                    &challenge.v2.accepts[0],
                    &challenge.body.accepts[0],
                );
                assert!(offered.is_object());
                assert_eq!(requirements(&config, pay_to, &offer, version), offered);
            }
        }
    }
}
