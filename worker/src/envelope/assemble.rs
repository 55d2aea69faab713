//! From the model's answer to the envelope we deliver: server-filled keys, computed context gaps,
//! confidence capped by coverage, enum case repaired. Only repairs that cannot add a claim are
//! made here (lowering confidence, dropping numbers nobody gave, fixing case); anything else is
//! left for the schema and [`super::check`] to report, so the model is asked to fix it.

use super::coverage::{Caller, Confidence};
use super::schema::MODEL_GAPS_MAX;
use grove_common::catalog::{CoachId, Mode, ModeId};
use grove_common::requests::CoachingRequest;
use grove_common::schema::SchemaRegistry;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// Keys of the envelope in the published order (spec 2.4).
pub const ENVELOPE_ORDER: [&str; 11] = [
    "agent",
    "mode",
    "reply",
    "thinking",
    "numbers",
    "actions",
    "caveats",
    "deliverable",
    "context_gaps",
    "usage",
    "receipt",
];

/// [`assemble_for`] with the caller's facts worked out here (tests, one-off uses).
pub fn assemble(
    coach_id: CoachId,
    mode: &Mode,
    request: &CoachingRequest,
    model_output: Value,
    usage: (u64, u64),
    receipt: Value,
) -> Value {
    let caller = Caller::of(mode, request);
    assemble_for(coach_id, mode, &caller, model_output, usage, receipt)
}

/// The deliverable envelope for `model_output`. Never panics: a key the model left out stays out
/// (the published schema then reports it), and a value of the wrong type is passed through as is.
pub fn assemble_for(
    coach_id: CoachId,
    mode: &Mode,
    caller: &Caller,
    model_output: Value,
    usage: (u64, u64),
    receipt: Value,
) -> Value {
    let mut model = match model_output {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(schema) = response_schema(mode.id) {
        for (key, value) in model.iter_mut() {
            if let Some(sub) = schema.pointer(&format!("/properties/{key}")) {
                normalise_enums(sub, value);
            }
        }
    }

    let missing = &caller.missing;
    let mut ceiling = caller.ceiling;
    // CONTRACT 8: a capacity plan without the data to decide is low confidence by definition.
    let verdict = model.get("deliverable").and_then(|d| d.get("verdict"));
    if verdict.and_then(Value::as_str) == Some("insufficient_data") {
        ceiling = Confidence::Low;
    }
    if let Some(Value::Object(thinking)) = model.get_mut("thinking")
        && let Some(Value::String(c)) = thinking.get_mut("confidence")
        && let Some(claimed) = Confidence::parse(c)
    {
        *c = claimed.min(ceiling).as_str().to_owned();
    }
    if !caller.gave_numbers() {
        model.insert("numbers".into(), Value::Array(Vec::new()));
    }
    let gaps = context_gaps(missing, model.get("context_gaps"));
    model.insert("context_gaps".into(), gaps);

    let mut receipt = Some(receipt);
    let mut envelope = Map::new();
    for key in ENVELOPE_ORDER {
        let value = match key {
            "agent" => Some(Value::from(coach_id)),
            "mode" => Some(Value::from(mode.id)),
            "usage" => Some(serde_json::json!({"input_tokens": usage.0, "output_tokens": usage.1})),
            "receipt" => receipt.take(),
            _ => model.remove(key),
        };
        if let Some(v) = value {
            envelope.insert(key.to_owned(), v);
        }
    }
    Value::Object(envelope)
}

/// The missing recommended fields (dotted), then up to three of the model's own gaps: strings
/// only, trimmed, without duplicates, and without any that merely restate a dotted field.
fn context_gaps(missing: &[&'static str], model_gaps: Option<&Value>) -> Value {
    let mut out: Vec<String> = missing.iter().map(|s| (*s).to_owned()).collect();
    let mut seen: Vec<String> = missing.iter().flat_map(|f| field_spellings(f)).collect();
    let extras = model_gaps.and_then(Value::as_array).into_iter().flatten();
    let mut added = 0;
    for gap in extras.filter_map(Value::as_str) {
        let gap = gap.trim();
        let key = words(gap);
        if added == MODEL_GAPS_MAX || key.is_empty() || seen.contains(&key) || is_dotted(gap) {
            continue;
        }
        seen.push(key);
        out.push(gap.to_owned());
        added += 1;
    }
    Value::Array(out.into_iter().map(Value::String).collect())
}

/// Ways a model restates `metrics.leads_per_month`: "metrics leads per month", "leads per month",
/// and without its unit suffix ("monthly revenue" for `monthly_revenue_usd`).
fn field_spellings(field: &str) -> Vec<String> {
    let last = field.rsplit('.').next().unwrap_or(field);
    let bare = last
        .strip_suffix("_usd")
        .or_else(|| last.strip_suffix("_pct"))
        .unwrap_or(last);
    vec![words(field), words(last), words(bare)]
}

/// Lower-case words joined by single spaces, punctuation dropped.
fn words(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `audience.icp`-style paths belong to the server's list, never to the model's plain-words extras.
fn is_dotted(s: &str) -> bool {
    s.contains('.')
        && !s.contains(' ')
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
}

/// Rewrites every string whose schema has an `enum` (or `const`) it matches only case-insensitively
/// to the schema's spelling. Anthropic does not guarantee enum case (llm.md §2.1).
pub fn normalise_enums(schema: &Value, value: &mut Value) {
    fix_enum_case(schema, value, "", &mut Vec::new());
}

/// [`normalise_enums`] below `path`, pushing the JSON pointer of every value it changed.
pub fn fix_enum_case(schema: &Value, value: &mut Value, path: &str, fixed: &mut Vec<String>) {
    fix_below(schema, value, &mut path.to_owned(), fixed);
}

/// `fix_enum_case` with the pointer grown and cut back in place: it runs over every value of
/// every answer, and only a changed value needs its pointer kept.
fn fix_below(schema: &Value, value: &mut Value, at: &mut String, fixed: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            let allowed = schema
                .get("enum")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .or_else(|| schema.get("const").map(std::slice::from_ref))
                .unwrap_or_default();
            let trimmed = s.trim();
            let hit = allowed
                .iter()
                .filter_map(Value::as_str)
                .find(|a| a.eq_ignore_ascii_case(trimmed));
            if let Some(hit) = hit
                && hit != s
            {
                *s = hit.to_owned();
                fixed.push(at.clone());
            }
        }
        Value::Array(list) => {
            if let Some(items) = schema.get("items") {
                for (i, v) in list.iter_mut().enumerate() {
                    let len = at.len();
                    at.push('/');
                    push_index(at, i);
                    fix_below(items, v, at, fixed);
                    at.truncate(len);
                }
            }
        }
        Value::Object(map) => {
            let Some(properties) = schema.get("properties") else {
                return;
            };
            for (key, v) in map.iter_mut() {
                if let Some(sub) = properties.get(key) {
                    let len = at.len();
                    at.push('/');
                    push_escaped(at, key);
                    fix_below(sub, v, at, fixed);
                    at.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// Appends a JSON pointer segment for an array index, without a string of its own.
fn push_index(at: &mut String, i: usize) {
    use std::fmt::Write;
    let _ = write!(at, "{i}");
}

/// Appends `key` escaped as a JSON pointer segment (`escape_pointer`), without the two copies
/// that makes: this runs for every key of every answer.
fn push_escaped(at: &mut String, key: &str) {
    if !key.contains(['~', '/']) {
        at.push_str(key);
        return;
    }
    for c in key.chars() {
        match c {
            '~' => at.push_str("~0"),
            '/' => at.push_str("~1"),
            c => at.push(c),
        }
    }
}

/// The published response schema of `mode`, from a registry loaded once per process.
/// The files are embedded at compile time and a unit test compiles them, so `None` is unreachable
/// in practice; it only skips the case repair.
fn response_schema(mode: ModeId) -> Option<&'static Value> {
    static REGISTRY: OnceLock<Option<SchemaRegistry>> = OnceLock::new();
    let registry = REGISTRY
        .get_or_init(|| SchemaRegistry::load().ok())
        .as_ref()?;
    Some(registry.mode(mode).response.json())
}

#[cfg(test)]
mod pointer_tests {
    use super::{push_escaped, push_index};

    #[test]
    fn pointer_segments_are_escaped_as_escape_pointer_does() {
        for key in ["plain", "a/b", "~x", "~/~1/", "ünïcode/é~"] {
            let mut at = String::from("/root");
            push_escaped(&mut at, key);
            assert_eq!(
                at,
                format!("/root{}", grove_common::schema::escape_pointer(key))
            );
        }
        let mut at = String::from("/list/");
        push_index(&mut at, 17);
        assert_eq!(at, "/list/17");
    }
}
