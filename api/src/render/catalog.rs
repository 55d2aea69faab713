//! The two catalogs (spec 2.1, 2.2, 2.7; CONTRACT 2) and the discovery document, derived from
//! `grove_common::catalog` and the configuration.

use super::{number_word, usdc_on};
use grove_common::{
    catalog::{self, COACHES, MODES, REVIEW_REQUEST, paths},
    config::{Config, Network, SmsProviderKind},
};
use serde_json::{Value, json};

/// What the service sells, in one paragraph (catalog and OpenAPI).
pub fn description(network: Network) -> String {
    format!(
        "Pay-per-call growth coaching for AI agents: {} coaches, {} modes, each answer a strict \
         JSON envelope with a one-constraint diagnosis, numbers, actions, caveats and a typed \
         deliverable. Plus one paid action: a consented, tracked SMS review request. Paid in {} \
         with x402; free sandbox, schemas and guides.",
        number_word(COACHES.len()),
        number_word(MODES.len()),
        usdc_on(network),
    )
}

/// `payment` block shared by both catalogs.
fn payment(config: &Config, extra_note: Option<&str>) -> Value {
    let network = config.network;
    let mut note = format!(
        "x402, scheme exact, {} ({}, asset {}). Send the payment in PAYMENT-SIGNATURE (x402 v2) \
         or X-PAYMENT (x402 v1); an unpaid call returns 402 with the requirements in the \
         PAYMENT-REQUIRED header (v2) and in the body (v1).",
        usdc_on(network),
        network.caip2(),
        network.usdc_address(),
    );
    if config.pay_to.is_none() {
        note.push_str(" Payments are disabled on this server (no pay-to address): paid calls answer 503 payments_disabled; the sandbox works.");
    } else if config.settles_locally() {
        note.push_str(" DEVELOPMENT: no facilitator is configured, so payments are verified locally and recorded as unsettled; no money moves.");
    }
    if let Some(extra) = extra_note {
        note.push(' ');
        note.push_str(extra);
    }
    json!({
        "protocol": "x402",
        "enabled": config.pay_to.is_some(),
        "network": network.caip2(),
        "asset": network.usdc_address(),
        "testnet": network.is_testnet(),
        "note": note,
    })
}

/// `GET /api/v1/agents`.
pub fn agents(config: &Config) -> Value {
    let agents: Vec<Value> = COACHES
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "name": c.name,
                "domain": c.domain,
                "tagline": c.tagline,
                "modes": c.modes.iter().map(|m| m.mode).collect::<Vec<_>>(),
                "mode_details": c.offered_modes().map(|(mode, cm)| json!({
                    "id": mode.id,
                    "price": mode.price().to_string(),
                    "summary": cm.summary,
                })).collect::<Vec<_>>(),
                "url": c.call_path(),
            })
        })
        .collect();
    let modes: Vec<Value> = MODES
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "summary": m.summary,
                "tier": m.tier.as_str(),
                "price": m.price().to_string(),
                "recommended_context": m.recommended_context,
                "request_schema": m.request_schema_path(),
                "response_schema": m.response_schema_path(),
            })
        })
        .collect();
    let llm_note = config.llm.is_none().then_some(
        "No model provider is configured on this server: paid coaching calls answer 503 unavailable; the sandbox works.",
    );
    json!({
        "service": config.service_name,
        "version": "v1",
        "description": description(config.network),
        "call_shape": call_shape(config),
        "payment": payment(config, llm_note),
        "agents": agents,
        "modes": modes,
        "openapi": paths::OPENAPI,
        "docs": paths::AGENTS_GUIDE,
    })
}

fn call_shape(config: &Config) -> Value {
    json!({
        "method": "POST",
        "url": paths::AGENT_CALL,
        "content_type": "application/json",
        "body": {
            "mode": "<one of the coach's modes>",
            "messages": [{"role": "user", "content": "<what the business owner said>"}],
            "context": {"company": {}, "metrics": {}, "offer": {}, "audience": {}},
        },
        "headers": {
            "PAYMENT-SIGNATURE": "x402 v2 payment (base64); X-PAYMENT for x402 v1",
            "Idempotency-Key": "optional, 1-255 printable ASCII; repeats within 24 h replay the result",
            config.sandbox_header(): "1 or true for the free sandbox (also ?sandbox=1)",
        },
    })
}

/// `GET /api/v1/actions`.
pub fn actions(config: &Config) -> Value {
    let a = &REVIEW_REQUEST;
    let fulfillment = match config.sms_provider {
        SmsProviderKind::Twilio => json!({
            "enabled": true,
            "note": "Messages are sent by SMS through Twilio to +1 numbers, within the recipient's quiet-hours window.",
        }),
        SmsProviderKind::Outbox => json!({
            "enabled": false,
            "note": "DEVELOPMENT outbox: requests are accepted and tracked, messages are stored and logged, and no SMS leaves this machine.",
        }),
    };
    json!({
        "service": config.service_name,
        "version": "v1",
        "description": "Paid actions with a real-world side effect. Each returns a tracked id.",
        "call_shape": {
            "method": "POST",
            "url": "/api/v1/actions/{slug}/call",
            "content_type": "application/json",
            "headers": {
                "X-PAYMENT": "x402 v1 payment (base64); PAYMENT-SIGNATURE for x402 v2",
                "Idempotency-Key": "optional; a distinct key forces a genuine second send",
                config.sandbox_header(): "1 or true (also ?sandbox=1): the same checks as the paid call, then a free sample built from your request; nothing sent or charged",
            },
        },
        "payment": payment(config, None),
        "fulfillment": fulfillment,
        "actions": [{
            "id": a.id,
            "slug": a.slug,
            "name": a.name,
            "price": a.price.to_string(),
            "summary": a.summary,
            "endpoint": config.absolute(&a.call_path()),
            "request_schema": config.absolute(&a.request_schema_path()),
            "response_schema": config.absolute(&a.response_schema_path()),
        }],
        "idempotency": {
            "header": "Idempotency-Key",
            "note": "Without a key, a key is derived from the payer and the body, so an identical retry replays the original result and never sends a second SMS. A distinct key forces a genuine second send, still subject to consent, opt-out and quiet hours.",
        },
        "tags": ["sms", "reviews", "reputation", "x402", "usdc", "base"],
        "docs": paths::ACTIONS_GUIDE,
    })
}

/// `GET /.well-known/x402`.
pub fn well_known(config: &Config) -> Value {
    let mut resources: Vec<String> = COACHES
        .iter()
        .map(|c| config.absolute(&c.call_path()))
        .collect();
    resources.push(config.absolute(&REVIEW_REQUEST.call_path()));
    let proofs: Vec<String> = config.pay_to.iter().map(|a| a.to_checksum(None)).collect();
    let (min, max) = catalog::coaching_price_range();
    json!({
        "version": 1,
        "service": config.service_name,
        "resources": resources,
        "ownershipProofs": proofs,
        "skill": config.absolute(&config.skill_path()),
        "openapi": config.absolute(paths::OPENAPI),
        "instructions": format!(
            "POST a JSON body to a resource. Without payment you get 402 with the price ({min} to {max} per coaching call by mode, {} per review request) in the PAYMENT-REQUIRED header (x402 v2) and the body (v1). Sign a USDC EIP-3009 authorization on {} ({}, USDC {}, domain \"{}\", version \"{}\") and retry the identical request with PAYMENT-SIGNATURE or X-PAYMENT. Try any call free with the header {}: 1. Read the skill file for the full flow.",
            REVIEW_REQUEST.price,
            config.network.display_name(),
            config.network.caip2(),
            config.network.usdc_address(),
            config.network.usdc_domain_name(),
            config.network.usdc_domain_version(),
            config.sandbox_header(),
        ),
    })
}
