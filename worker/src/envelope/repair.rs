//! Safe repairs: changes to a model's answer that can only fix a spelling or take a claim away,
//! never add one or change what one says. They are tried before any re-ask, and the repaired
//! envelope is delivered only if the full schema and every rule then pass; each repair is
//! returned so the caller can log it.

use super::case::{self, CaseTree};
use grove_common::catalog::ModeId;
use grove_common::schema::Violation;
use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repair {
    /// JSON pointer of what was changed, in the envelope as it was at that moment.
    pub path: String,
    pub what: &'static str,
}

/// Envelope lists whose tail may go when they run over their cap: `numbers` (a later item may
/// build on an earlier one, never the reverse) and `actions` (most important first, as the
/// prompt asks). Deliverable lists are left alone: a procedure's last steps or a sequence's last
/// message are not optional.
const TRIMMABLE: [&str; 2] = ["numbers", "actions"];

/// Enum values the model wrote in another case (`"High"` for `high`), fixed in its raw answer.
pub fn enum_case(response_schema: &Value, model_answer: &mut Value) -> Vec<Repair> {
    fixed_case(&CaseTree::of(response_schema), model_answer)
}

/// [`enum_case`] against `mode`'s published response schema, compiled once (`case::tree`);
/// `response_schema` (that same schema) is compiled here only if that failed.
pub fn enum_case_for(
    mode: ModeId,
    response_schema: &Value,
    model_answer: &mut Value,
) -> Vec<Repair> {
    match case::tree(mode) {
        Some(tree) => fixed_case(tree, model_answer),
        None => enum_case(response_schema, model_answer),
    }
}

fn fixed_case(tree: &CaseTree, model_answer: &mut Value) -> Vec<Repair> {
    let mut fixed = Vec::new();
    tree.fix(model_answer, &mut String::new(), &mut fixed);
    fixed
        .into_iter()
        .map(|path| Repair {
            path,
            what: "enum value written in the schema's case",
        })
        .collect()
}

/// Drops every `numbers` item the checks flag (schema or rule), pass after pass, since an item
/// built on a dropped one is flagged in turn; then trims the trimmable lists to their caps.
/// Returns the repairs made and the problems `problems_of` still finds.
pub fn safe_repairs(
    response_schema: &Value,
    envelope: &mut Value,
    problems_of: impl Fn(&Value) -> Vec<Violation>,
) -> (Vec<Repair>, Vec<Violation>) {
    let mut repairs = Vec::new();
    let mut problems = problems_of(envelope);
    loop {
        let flagged: BTreeSet<usize> = problems
            .iter()
            .filter_map(|v| numbers_item(&v.path))
            .collect();
        let Some(list) = envelope.get_mut("numbers").and_then(Value::as_array_mut) else {
            break;
        };
        let (before, len) = (repairs.len(), list.len());
        for &i in flagged.iter().rev().filter(|&&i| i < len) {
            list.remove(i);
            repairs.push(Repair {
                path: format!("/numbers/{i}"),
                what: "numbers item dropped: it broke the schema or did not trace to the caller",
            });
        }
        if repairs.len() == before {
            break;
        }
        problems = problems_of(envelope);
    }
    // Trimmed after the drops, so a good item is not cut to make room for a bad one.
    for key in TRIMMABLE {
        let cap = response_schema
            .pointer(&format!("/properties/{key}/maxItems"))
            .and_then(Value::as_u64)
            .and_then(|c| usize::try_from(c).ok());
        let list = envelope.get_mut(key).and_then(Value::as_array_mut);
        if let (Some(cap), Some(list)) = (cap, list)
            && list.len() > cap
        {
            list.truncate(cap);
            repairs.push(Repair {
                path: format!("/{key}"),
                what: "list trimmed to its cap, first items kept",
            });
            problems = problems_of(envelope);
        }
    }
    (repairs, problems)
}

/// `Some(i)` for `/numbers/i` and anything below it.
fn numbers_item(path: &str) -> Option<usize> {
    let rest = path.strip_prefix("/numbers/")?;
    rest.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"properties": {
            "numbers": {"maxItems": 2, "items": {"properties": {"value": {"type": "string"}}}},
            "actions": {"maxItems": 1, "items": {"properties": {"effort": {"enum": ["hours", "days"]}}}},
            "caveats": {"maxItems": 1},
            "deliverable": {"properties": {"steps": {"maxItems": 1}}}
        }})
    }

    /// A checker that flags every numbers item whose value is not the caller's "9", or builds
    /// on a flagged one ("b" uses "a").
    fn problems_of(env: &Value) -> Vec<Violation> {
        let items = env["numbers"].as_array().cloned().unwrap_or_default();
        let values: Vec<&str> = items.iter().filter_map(|n| n["value"].as_str()).collect();
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != "9" && !(**v == "b" && values.contains(&"a")))
            .map(|(i, _)| Violation::new(format!("/numbers/{i}/value"), "does not trace"))
            .collect()
    }

    #[test]
    fn enum_case_is_fixed_where_the_schema_has_an_enum_and_logged_by_path() {
        let mut answer =
            json!({"actions": [{"effort": "Hours"}, {"effort": "days"}, {"effort": "Weekly"}]});
        let repairs = enum_case(&schema(), &mut answer);
        assert_eq!(answer["actions"][0]["effort"], "hours");
        assert_eq!(
            answer["actions"][2]["effort"], "Weekly",
            "not an enum value: left to the validator"
        );
        assert_eq!(
            repairs.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
            ["/actions/0/effort"]
        );
    }

    #[test]
    fn envelope_lists_are_trimmed_to_their_caps_but_deliverable_lists_and_caveats_are_not() {
        let mut env = json!({
            "numbers": [{"value": "9"}, {"value": "9"}, {"value": "9"}],
            "actions": [{"t": 1}, {"t": 2}],
            "caveats": ["a.", "b."],
            "deliverable": {"steps": [1, 2]}
        });
        let (repairs, left) = safe_repairs(&schema(), &mut env, problems_of);
        assert_eq!(
            (
                env["numbers"].as_array().unwrap().len(),
                env["actions"].clone(),
                left
            ),
            (2, json!([{"t": 1}]), vec![])
        );
        assert_eq!(
            (
                env["caveats"].as_array().unwrap().len(),
                env["deliverable"]["steps"].as_array().unwrap().len()
            ),
            (2, 2)
        );
        assert_eq!(
            repairs.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
            ["/numbers", "/actions"]
        );
    }

    #[test]
    fn untraceable_numbers_items_are_dropped_with_the_items_built_on_them() {
        let mut env = json!({"numbers": [{"value": "9"}, {"value": "a"}, {"value": "b"}]});
        let (repairs, left) = safe_repairs(&json!({}), &mut env, problems_of);
        assert_eq!(env["numbers"], json!([{"value": "9"}]));
        assert_eq!(left, vec![]);
        assert_eq!(
            repairs.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
            ["/numbers/1", "/numbers/1"]
        );
    }

    #[test]
    fn problems_elsewhere_are_returned_untouched() {
        let check = |env: &Value| {
            let mut v = problems_of(env);
            v.push(Violation::new("/reply", "too long"));
            v
        };
        let mut env = json!({"reply": "…", "numbers": [{"value": "47%"}]});
        let (_, left) = safe_repairs(&json!({}), &mut env, check);
        assert_eq!(left, vec![Violation::new("/reply", "too long")]);
        assert_eq!(env["numbers"], json!([]));
    }
}
