//! Rules a JSON Schema cannot state (CONTRACT 8, last paragraph), checked on the assembled
//! envelope after the published schema. Every field is read defensively: the model wrote it.

use super::coverage::Caller;
use super::figures::Figure;
use super::modes::Traced;
use super::prose::{self, Pool};
use super::text::{items, push, sentences, strings};
use super::{style, trace};
use grove_common::catalog::Mode;
use grove_common::modes::{self, Ctx, FieldKind, Kinds};
use grove_common::requests::CoachingRequest;
use grove_common::schema::Violation;
use serde_json::Value;

/// Every rule violation in `envelope`, each with a JSON pointer and a short rule. Empty means the
/// envelope may be delivered (once the published schema also passes).
pub fn check(mode: &Mode, request: &CoachingRequest, envelope: &Value) -> Vec<Violation> {
    check_for(mode, &Caller::of(mode, request), envelope)
}

/// [`check`] with the caller's facts worked out once for the call.
pub fn check_for(mode: &Mode, caller_facts: &Caller, envelope: &Value) -> Vec<Violation> {
    let request = caller_facts.request;
    let caps = mode.tier.caps();
    let mut out = Vec::new();

    if let Some(reply) = envelope.get("reply").and_then(Value::as_str) {
        let n = reply.chars().count();
        if n > caps.reply_max_chars {
            push(
                &mut out,
                "/reply",
                format!(
                    "must be at most {} characters, is {n}; aim for under {} words",
                    caps.reply_max_chars, caps.reply_word_target
                ),
            );
        }
        style::reply(&caps, reply, &mut out);
    }
    count("/numbers", envelope, 0, caps.numbers_max, &mut out);
    count(
        "/actions",
        envelope,
        caps.actions_min,
        caps.actions_max,
        &mut out,
    );
    count("/caveats", envelope, 0, caps.caveats_max, &mut out);
    for (i, caveat) in items(envelope.get("caveats")).iter().enumerate() {
        let n = caveat.as_str().map(sentences).unwrap_or(1);
        if n != 1 {
            push(
                &mut out,
                format!("/caveats/{i}"),
                "must be exactly one sentence",
            );
        }
    }

    // Numbers first: what they show is what prose may cite.
    let caller = &caller_facts.figures;
    let mut known = trace::Known::new(caller);
    let numbers = envelope.get("numbers").unwrap_or(&Value::Null);
    out.extend(trace::check_into(numbers, &mut known));
    let mut cited = caller.clone();
    cited.extend_from_slice(known.earlier());
    let d = envelope.get("deliverable").unwrap_or(&Value::Null);
    let rules = modes::rules(mode.id);
    let kinds = rules.kinds();
    let mut typed = Vec::new();
    typed_numbers(d, &mut String::new(), &kinds, &mut typed);
    let pool = Pool {
        cited: &cited,
        typed: &typed,
    };

    let mut prose_texts: Vec<(String, &str)> = Vec::new();
    strings(
        envelope.get("reply").unwrap_or(&Value::Null),
        "/reply",
        &mut prose_texts,
    );
    strings(
        envelope.get("caveats").unwrap_or(&Value::Null),
        "/caveats",
        &mut prose_texts,
    );
    let diagnosis = envelope
        .pointer("/thinking/diagnosis")
        .unwrap_or(&Value::Null);
    strings(diagnosis, "/thinking/diagnosis", &mut prose_texts);
    for (path, s) in prose_texts {
        prose::check(&path, s, &pool, true, &mut out);
    }
    let mut texts = Vec::new();
    strings(d, "", &mut texts);
    for (rel, s) in texts {
        if is_enum_like(s) {
            continue;
        }
        let path = format!("/deliverable{rel}");
        match kinds.of(&rel) {
            FieldKind::Proposal | FieldKind::Sourced => {}
            FieldKind::Fact => prose::check(&path, s, &pool, false, &mut out),
            FieldKind::Prose => prose::check(&path, s, &pool, true, &mut out),
        }
    }

    let traced = Traced {
        caller,
        pool: &pool,
    };
    let cx = Ctx::new(envelope, request, caller_facts.text(), &traced);
    // A deliverable that does not have its mode's type fails the published schema too; said
    // here as well, so that an answer whose mode rules could not run is never delivered.
    if let Err(shape) = rules.check(&cx, &mut out) {
        push(&mut out, "/deliverable", shape.to_string());
    }
    out
}

/// Numbers the deliverable types as the coach's own (prices, scores, days, ranks), but for the
/// mode's traced numbers (a stage's `estimated_conversion_pct`), which must themselves trace.
/// `at` is the pointer of `v` in the deliverable.
fn typed_numbers(v: &Value, at: &mut String, kinds: &Kinds, out: &mut Vec<Figure>) {
    let len = at.len();
    match v {
        Value::Number(n) if !kinds.is_traced_number(at) => {
            out.extend(n.as_f64().map(Figure::exact))
        }
        Value::Array(list) => {
            for (i, x) in list.iter().enumerate() {
                at.push('/');
                at.push_str(&i.to_string());
                typed_numbers(x, at, kinds, out);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                at.push('/');
                at.push_str(k);
                typed_numbers(x, at, kinds, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// An enum value ("30_days", "1_week") rather than text.
fn is_enum_like(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn count(path: &str, envelope: &Value, min: usize, max: usize, out: &mut Vec<Violation>) {
    let Some(list) = envelope.pointer(path).and_then(Value::as_array) else {
        return;
    };
    if list.len() > max {
        push(out, path, format!("must have at most {max} items"));
    } else if list.len() < min {
        push(out, path, format!("must have at least {min} items"));
    }
}
