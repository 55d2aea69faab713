use super::*;
use crate::catalog::ModeId;

#[test]
fn committed_schemas_are_the_generators_output() {
    let drift = drift(&committed_dir());
    assert!(
        drift.is_empty(),
        "schemas/ is not what the catalog generates:\n  {}\nRegenerate with `{REGENERATE}` and commit the result.",
        drift
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn drift_names_each_missing_changed_and_stray_file() {
    let dir = std::env::temp_dir().join(format!("grove-schemas-{}", uuid::Uuid::new_v4()));
    assert_eq!(write_all(&dir).expect("write").len(), 34);
    assert_eq!(drift(&dir), vec![]);
    assert_eq!(write_all(&dir).expect("rewrite"), Vec::<String>::new());

    let changed = dir.join("draft_sop/response.json");
    let text = std::fs::read_to_string(&changed).expect("read");
    std::fs::write(
        &changed,
        text.replacen("\"maxLength\": 100", "\"maxLength\": 101", 1),
    )
    .expect("edit");
    std::fs::remove_file(dir.join("scope_role/request.json")).expect("remove");
    std::fs::write(dir.join("actions/stray.json"), "{}").expect("stray");
    let found = drift(&dir);
    assert!(
        found.contains(&Drift::Missing("scope_role/request.json".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&Drift::Extra("actions/stray.json".into())),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|d| matches!(d, Drift::Differs { path, line }
            if path == "draft_sop/response.json" && *line > 1)),
        "{found:?}"
    );
    assert_eq!(found.len(), 3, "{found:?}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// Visits every schema node with its JSON pointer.
fn walk(node: &Value, at: &str, f: &mut impl FnMut(&str, &serde_json::Map<String, Value>)) {
    match node {
        Value::Object(map) => {
            f(at, map);
            for (k, v) in map {
                walk(v, &format!("{at}/{k}"), f);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{at}/{i}"), f);
            }
        }
        _ => {}
    }
}

#[test]
fn every_file_is_self_contained_closed_and_strict_in_its_responses() {
    let contract_modes: Vec<&str> = ModeId::ALL[7..].iter().map(|m| m.as_str()).collect();
    for (rel, text) in files() {
        let schema: Value = serde_json::from_str(&text).expect("generated JSON parses");
        assert_eq!(schema["$schema"], DRAFT, "{rel}");
        assert!(
            schema["title"].is_string() && schema["description"].is_string(),
            "{rel}"
        );
        let response = rel.ends_with("response.json");
        let mode = rel.split('/').next().unwrap_or_default();
        walk(&schema, "", &mut |at, node| {
            // A node under `properties` is a property map, not a schema.
            if at.ends_with("/properties") {
                return;
            }
            for key in ["$ref", "$defs", "definitions", "$id", "$anchor"] {
                assert!(!node.contains_key(key), "{rel}: {key} at {at}");
            }
            if node.get("type") == Some(&Value::from("object")) || node.contains_key("properties") {
                assert_eq!(node.get("type"), Some(&Value::from("object")), "{rel} {at}");
                assert_eq!(
                    node.get("additionalProperties"),
                    Some(&Value::Bool(false)),
                    "{rel} {at}"
                );
                if response {
                    let mut props: Vec<&String> = node["properties"]
                        .as_object()
                        .expect("properties")
                        .keys()
                        .collect();
                    if at.is_empty() {
                        props.retain(|p| *p != "sandbox");
                    }
                    let required: Vec<&str> = node
                        .get("required")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    assert!(
                        !required.contains(&"sandbox"),
                        "{rel}: sandbox must stay optional"
                    );
                    let props: Vec<&str> = props.into_iter().map(String::as_str).collect();
                    assert_eq!(required, props, "{rel} {at}");
                }
            }
            let nullable = node
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.contains(&Value::from("null")));
            if nullable && response && contract_modes.contains(&mode) {
                assert!(
                    !at.contains("/deliverable/"),
                    "{rel}: null allowed at {at} (CONTRACT 8)"
                );
            }
        });
    }
    assert_eq!(files().len(), 2 * MODES.len() + 2);
}

/// Issue 9: a grammar-constrained model stops, and a client can size its storage, only when
/// every string the model writes has a maximum length. Server-filled keys are not the model's.
#[test]
fn every_string_the_model_writes_in_a_response_has_a_max_length() {
    let mut checked = 0;
    for m in MODES.iter() {
        let schema = super::coaching::response(m);
        for (key, node) in schema["properties"].as_object().expect("properties") {
            if ["agent", "mode", "usage", "receipt", "sandbox"].contains(&key.as_str()) {
                continue;
            }
            walk(node, &format!("/{key}"), &mut |at, n| {
                let is_string = match n.get("type") {
                    Some(Value::String(t)) => t == "string",
                    Some(Value::Array(ts)) => ts.contains(&Value::from("string")),
                    _ => false,
                };
                if is_string && !n.contains_key("enum") && !n.contains_key("const") {
                    let max = n.get("maxLength").and_then(Value::as_u64);
                    assert!(max.is_some_and(|x| x > 0), "{} {at}: no maxLength", m.id);
                    checked += 1;
                }
            });
        }
    }
    assert!(checked > 300, "{checked} strings checked");
}

#[test]
fn richer_deliverables_carry_what_their_mode_promises() {
    let prop = |mode: ModeId, pointer: &str| {
        let m = crate::catalog::mode(mode);
        super::coaching::response(m)["properties"]["deliverable"]
            .pointer(pointer)
            .is_some()
    };
    assert!(prop(
        ModeId::ScopeRole,
        "/properties/agent_brief/properties/guardrails"
    ));
    assert!(prop(
        ModeId::PlanCapacity,
        "/properties/growth_target/properties/statement"
    ));
    assert!(prop(ModeId::PlanCapacity, "/properties/capacity_runs_out"));
    assert!(prop(
        ModeId::RescueChurn,
        "/properties/churn_segments/items/properties/monthly_revenue_at_stake"
    ));
    assert!(prop(
        ModeId::MapAutomation,
        "/properties/candidates/items/properties/hours_saved"
    ));
    assert!(prop(
        ModeId::DecideStack,
        "/properties/switching_cost/properties/estimate"
    ));
}
