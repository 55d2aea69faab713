//! The schema the model answers to, derived from the published response schema, and the copies of
//! it each provider can enforce. Stripping is safe because the handler always validates the
//! assembled envelope against the full published schema, then [`super::check`], afterwards.

use grove_common::config::LlmProviderKind;
use serde_json::{Map, Value, json};

/// Envelope keys the server fills; the model never sees or produces them.
pub const SERVER_KEYS: [&str; 5] = ["agent", "mode", "usage", "receipt", "sandbox"];

/// Extra gaps the model may add after the server's dotted ones (CONTRACT 7).
pub const MODEL_GAPS_MAX: usize = 3;

/// Key order of the model's answer. OpenAI emits keys in schema order, so the diagnosis and the
/// numbers are pinned before the prose is written (llm.md §7.4); assembly restores the published order.
pub const MODEL_ORDER: [&str; 7] = [
    "thinking",
    "numbers",
    "reply",
    "actions",
    "caveats",
    "deliverable",
    "context_gaps",
];

/// Formats OpenAI strict mode accepts (llm.md §1.2); Anthropic also accepts `uri`.
const OPENAI_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
const ANTHROPIC_FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The published response schema without the server-filled keys, with `context_gaps` limited to
/// the model's own extra gaps.
pub fn model_schema(response_schema: &Value) -> Value {
    let mut schema = response_schema.clone();
    let Some(root) = schema.as_object_mut() else {
        return schema;
    };
    if let Some(Value::Object(props)) = root.get("properties") {
        let mut ordered = Map::new();
        for key in MODEL_ORDER {
            if let Some(v) = props.get(key) {
                ordered.insert(key.to_owned(), v.clone());
            }
        }
        // Anything the published schema adds later still reaches the model.
        for (k, v) in props {
            if !SERVER_KEYS.contains(&k.as_str()) && !ordered.contains_key(k) {
                ordered.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::Object(gaps)) = ordered.get_mut("context_gaps") {
            gaps.insert("maxItems".into(), json!(MODEL_GAPS_MAX));
            gaps.insert(
                "description".into(),
                json!(
                    "Only gaps beyond the recommended context fields, in plain words (the server \
                     adds the missing fields itself); empty when there are none."
                ),
            );
        }
        let required: Vec<Value> = ordered.keys().map(|k| json!(k)).collect();
        root.insert("required".into(), Value::Array(required));
        root.insert("properties".into(), Value::Object(ordered));
    }
    if let Some(Value::String(title)) = root.get_mut("title") {
        *title = title.replace("coaching response", "coaching answer");
    }
    // The published text talks about the HTTP response and the sandbox flag; the model needs neither.
    root.insert(
        "description".into(),
        json!("The coach's answer. The server adds agent, mode, usage and receipt itself."),
    );
    schema
}

/// A copy of `model_schema` the provider's constrained decoder accepts. Keywords are kept by
/// allow-list, so anything the provider rejects (or that llm.md marks risky) cannot slip through;
/// each dropped cap is written into the field's description so the model still sees it.
pub fn provider_schema(model_schema: &Value, provider: LlmProviderKind) -> Value {
    strip(model_schema, provider)
}

fn strip(node: &Value, provider: LlmProviderKind) -> Value {
    let Some(obj) = node.as_object() else {
        return node.clone();
    };
    let anthropic = provider == LlmProviderKind::Anthropic;
    let mut out = Map::new();
    let mut notes: Vec<String> = Vec::new();
    for (key, value) in obj {
        match key.as_str() {
            // `$schema` and `title` go: some gateways reject them, and they only cost tokens.
            "type" | "enum" | "const" | "description" | "required" => {
                out.insert(key.clone(), value.clone());
            }
            "properties" | "$defs" => {
                let props = value.as_object().into_iter().flatten();
                let map = props
                    .map(|(k, v)| (k.clone(), strip(v, provider)))
                    .collect();
                out.insert(key.clone(), Value::Object(map));
            }
            "items" => {
                out.insert(key.clone(), strip(value, provider));
            }
            "anyOf" => {
                let branches = value.as_array().into_iter().flatten();
                let list = branches.map(|v| strip(v, provider)).collect();
                out.insert(key.clone(), Value::Array(list));
            }
            "pattern" | "$ref" => {
                out.insert(key.clone(), value.clone());
            }
            "format" => {
                let allowed: &[&str] = if anthropic {
                    &ANTHROPIC_FORMATS
                } else {
                    &OPENAI_FORMATS
                };
                if value.as_str().is_some_and(|f| allowed.contains(&f)) {
                    out.insert(key.clone(), value.clone());
                }
            }
            "minItems" if !anthropic || value.as_u64().is_some_and(|n| n <= 1) => {
                out.insert(key.clone(), value.clone());
            }
            "maxItems" | "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum"
            | "multipleOf"
                if !anthropic =>
            {
                out.insert(key.clone(), value.clone());
            }
            "uniqueItems" if value == &Value::Bool(true) => notes.push("(no duplicates)".into()),
            _ => {}
        }
    }
    notes.extend(cap_notes(obj, &out));
    if !notes.is_empty() {
        let base = out.get("description").and_then(Value::as_str).unwrap_or("");
        let text = [base.trim_end()]
            .into_iter()
            .chain(notes.iter().map(String::as_str))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        out.insert("description".into(), Value::String(text));
    }
    // Strict decoders want a type on every leaf; the published schema leaves it off on `const`.
    if !out.contains_key("type")
        && let Some(t) = out.get("const").or_else(|| out.get("enum")?.get(0))
    {
        out.insert("type".into(), json!(json_type(t)));
    }
    if out.contains_key("properties") {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

/// Descriptions of the caps present in `original` but dropped from `kept`.
fn cap_notes(original: &Map<String, Value>, kept: &Map<String, Value>) -> Vec<String> {
    let dropped = |k: &str| original.get(k).filter(|_| !kept.contains_key(k));
    let num = |v: &Value| v.to_string();
    let mut notes = Vec::new();
    match (dropped("minLength"), dropped("maxLength")) {
        (Some(min), None) if min.as_u64() == Some(1) => notes.push("(not empty)".to_owned()),
        (Some(min), None) => notes.push(format!("(at least {} characters)", num(min))),
        (Some(min), Some(max)) if min.as_u64() == Some(1) => {
            notes.push(format!("(not empty, at most {} characters)", num(max)));
        }
        (Some(min), Some(max)) => {
            notes.push(format!("({} to {} characters)", num(min), num(max)));
        }
        (None, Some(max)) => notes.push(format!("(at most {} characters)", num(max))),
        (None, None) => {}
    }
    match (dropped("minItems"), dropped("maxItems")) {
        (Some(min), Some(max)) => notes.push(format!("({} to {} items)", num(min), num(max))),
        (Some(min), None) => notes.push(format!("(at least {} items)", num(min))),
        (None, Some(max)) => notes.push(format!("(at most {} items)", num(max))),
        (None, None) => {}
    }
    match (dropped("minimum"), dropped("maximum")) {
        (Some(min), Some(max)) => notes.push(format!("(from {} to {})", num(min), num(max))),
        (Some(min), None) => notes.push(format!("(at least {})", num(min))),
        (None, Some(max)) => notes.push(format!("(at most {})", num(max))),
        (None, None) => {}
    }
    for (k, phrase) in [
        ("exclusiveMinimum", "greater than"),
        ("exclusiveMaximum", "less than"),
        ("multipleOf", "a multiple of"),
    ] {
        if let Some(v) = dropped(k) {
            notes.push(format!("({phrase} {})", num(v)));
        }
    }
    notes
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}
