//! From the model's answer to the envelope we deliver: server-filled keys, computed context gaps,
//! confidence capped by coverage, enum case repaired. Only repairs that cannot add a claim are
//! made here (lowering confidence, dropping numbers nobody gave, fixing case); anything else is
//! left for the schema and [`super::check`] to report, so the model is asked to fix it.

use super::case;
use super::coverage::{Caller, Confidence};
use super::schema::MODEL_GAPS_MAX;
use grove_common::catalog::{CoachId, Mode};
use grove_common::requests::CoachingRequest;
use serde_json::{Map, Value};

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
    for (key, value) in model.iter_mut() {
        if let Some(sub) = case::tree(mode.id).and_then(|t| t.property(key)) {
            sub.fix(value, &mut String::new(), &mut Vec::new());
        }
    }

    let missing = &caller.missing;
    let mut ceiling = caller.ceiling;
    // An answer may itself say the caller gave too little to judge (CONTRACT 8: a capacity plan
    // without the data to decide is low confidence by definition).
    let deliverable = model.get("deliverable").unwrap_or(&Value::Null);
    if grove_common::modes::rules(mode.id).low_confidence(deliverable) {
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
