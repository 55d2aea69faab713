//! The model schema and the provider copies, for all sixteen modes.

use super::*;
use crate::envelope::{model_schema, provider_schema};
use grove_common::config::LlmProviderKind;

const PROVIDERS: [LlmProviderKind; 2] = [LlmProviderKind::OpenAi, LlmProviderKind::Anthropic];

/// Keywords both providers' strict decoders reject, or that llm.md marks as risky.
const FORBIDDEN_BOTH: [&str; 17] = [
    "$schema",
    "title",
    "uniqueItems",
    "minLength",
    "maxLength",
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "default",
    "examples",
];

/// Numeric and array bounds Anthropic's structured outputs do not accept on top of those.
const FORBIDDEN_ANTHROPIC_ONLY: [&str; 6] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "maxItems",
];

fn forbidden(provider: LlmProviderKind) -> Vec<&'static str> {
    let mut keys = FORBIDDEN_BOTH.to_vec();
    if provider == LlmProviderKind::Anthropic {
        keys.extend(FORBIDDEN_ANTHROPIC_ONLY);
    }
    keys
}

/// Calls `f(pointer, node)` for every schema node (not for the names inside `properties`).
fn walk(node: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
    f(at, node);
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            walk(v, &format!("{at}/properties/{k}"), f);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{at}/items"), f);
    }
}

fn published(mode_id: impl AsMode) -> &'static Value {
    registry().mode(mode_id.mode_id()).response.json()
}

#[test]
fn model_schema_leaves_out_server_keys_and_caps_the_models_own_gaps() {
    for m in all_modes() {
        let s = model_schema(published(m.id));
        let keys: Vec<&String> = s["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            vec![
                "thinking",
                "numbers",
                "reply",
                "actions",
                "caveats",
                "deliverable",
                "context_gaps"
            ],
            "{}",
            m.id
        );
        assert_eq!(s["required"].as_array().unwrap().len(), 7);
        assert_eq!(s["properties"]["context_gaps"]["maxItems"], json!(3));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(
            s["properties"]["reply"]["maxLength"],
            json!(m.tier.caps().reply_max_chars)
        );
    }
}

#[test]
fn provider_copies_hold_no_forbidden_keyword_for_any_mode() {
    for m in all_modes() {
        let model = model_schema(published(m.id));
        for p in PROVIDERS {
            let s = provider_schema(&model, p);
            walk(&s, "", &mut |at, node| {
                let obj = node.as_object().unwrap();
                for k in &forbidden(p) {
                    assert!(!obj.contains_key(*k), "{} {p:?} {at} has {k}", m.id);
                }
                if p == LlmProviderKind::Anthropic
                    && let Some(n) = obj.get("minItems")
                {
                    assert!(n.as_u64().unwrap() <= 1, "{} {at} minItems {n}", m.id);
                }
                if let Some(f) = obj.get("format") {
                    assert!(
                        f != "uri" || p == LlmProviderKind::Anthropic,
                        "{} {at}",
                        m.id
                    );
                }
            });
        }
    }
}

#[test]
fn provider_copies_keep_every_object_closed_and_fully_required_with_typed_leaves() {
    for m in all_modes() {
        let model = model_schema(published(m.id));
        for p in PROVIDERS {
            let s = provider_schema(&model, p);
            walk(&s, "", &mut |at, node| {
                assert!(
                    node.get("type").is_some(),
                    "{} {p:?} {at} has no type",
                    m.id
                );
                if let Some(props) = node.get("properties").and_then(Value::as_object) {
                    assert_eq!(node["additionalProperties"], json!(false), "{} {at}", m.id);
                    let mut required: Vec<&str> = node["required"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap())
                        .collect();
                    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
                    required.sort_unstable();
                    keys.sort_unstable();
                    assert_eq!(required, keys, "{} {p:?} {at}", m.id);
                }
            });
        }
    }
}

#[test]
fn dropped_caps_move_into_descriptions() {
    let model = model_schema(published("diagnose_growth"));
    let openai = provider_schema(&model, LlmProviderKind::OpenAi);
    let reply = openai["properties"]["reply"]["description"]
        .as_str()
        .unwrap();
    assert!(
        reply.ends_with("(not empty, at most 1400 characters)"),
        "{reply}"
    );
    assert_eq!(openai["properties"]["numbers"]["maxItems"], json!(3));

    let anthropic = provider_schema(&model, LlmProviderKind::Anthropic);
    let numbers = anthropic["properties"]["numbers"]["description"]
        .as_str()
        .unwrap();
    assert!(numbers.ends_with("(at most 3 items)"), "{numbers}");
    let basis = anthropic.pointer("/properties/numbers/items/properties/basis/description");
    assert!(
        basis
            .unwrap()
            .as_str()
            .unwrap()
            .contains("(at most 240 characters)")
    );
    let levers = &anthropic["properties"]["deliverable"]["properties"]["ranked_levers"];
    assert_eq!(levers["minItems"], json!(1));
    assert!(
        levers["description"]
            .as_str()
            .unwrap()
            .ends_with("(at most 3 items)")
    );

    let onboarding = provider_schema(
        &model_schema(published("plan_onboarding")),
        LlmProviderKind::Anthropic,
    );
    let day =
        onboarding.pointer("/properties/deliverable/properties/first_value/properties/target_day");
    assert_eq!(day.unwrap()["description"], json!("(from 1 to 14)"));

    let outbound = provider_schema(
        &model_schema(published("write_outbound_sequence")),
        LlmProviderKind::OpenAi,
    );
    let merge = &outbound["properties"]["deliverable"]["properties"]["merge_fields"];
    assert!(
        merge["description"]
            .as_str()
            .unwrap()
            .ends_with("(no duplicates)")
    );
    let decide = provider_schema(
        &model_schema(published("decide_stack")),
        LlmProviderKind::OpenAi,
    );
    let status = &decide["properties"]["deliverable"]["properties"]["status"];
    assert_eq!(status, &json!({"const": "proposed", "type": "string"}));
}

/// Issue 9: the published schema bounds every free string; the model schema keeps the bounds
/// (our own validation uses the full published schema), and each provider copy, which may not
/// carry `maxLength`, states it in the description instead.
#[test]
fn string_bounds_are_kept_for_validation_and_described_to_providers() {
    let model = model_schema(published("scope_role"));
    let goal = "/properties/deliverable/properties/agent_brief/properties/goal";
    assert_eq!(model.pointer(goal).unwrap()["maxLength"], json!(200));
    let diagnosis = "/properties/thinking/properties/diagnosis";
    assert_eq!(model.pointer(diagnosis).unwrap()["maxLength"], json!(300));
    for p in PROVIDERS {
        let copy = provider_schema(&model, p);
        let d = copy.pointer(diagnosis).unwrap();
        assert!(d.get("maxLength").is_none(), "{p:?}");
        let text = d["description"].as_str().unwrap();
        assert!(
            text.ends_with("(not empty, at most 300 characters)"),
            "{p:?}: {text}"
        );
        let g = copy.pointer(goal).unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(g.ends_with("(at most 200 characters)"), "{p:?}: {g}");
    }
}
