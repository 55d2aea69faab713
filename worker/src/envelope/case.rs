//! Enum case repair: every string whose schema has an `enum` (or `const`) it matches only
//! case-insensitively is rewritten to the schema's spelling. Anthropic does not guarantee enum
//! case (llm.md §2.1).
//!
//! The schema is compiled into a [`CaseTree`] of only the places that allow fixed strings, once
//! per mode: walking the whole published schema for every value of an answer, twice per answer,
//! was about 2 % of a paid call's CPU (issue 12). Parts of an answer under no enum are not
//! visited at all.

use grove_common::catalog::{ByMode, MODES, ModeId};
use grove_common::schema::SchemaRegistry;
use serde_json::Value;
use std::sync::OnceLock;

/// Where a schema allows only certain strings, and the way to them through `items` and
/// `properties` (the keywords the repair follows).
#[derive(Debug, Default)]
pub struct CaseTree {
    /// The strings of this node's `enum` (or its `const`).
    allowed: Vec<String>,
    items: Option<Box<CaseTree>>,
    /// Only the properties with an enum somewhere below them.
    properties: Vec<(String, CaseTree)>,
}

impl CaseTree {
    pub fn of(schema: &Value) -> Self {
        let allowed = schema
            .get("enum")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .or_else(|| schema.get("const").map(std::slice::from_ref))
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let items = schema
            .get("items")
            .map(CaseTree::of)
            .filter(|t| !t.is_empty())
            .map(Box::new);
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(key, sub)| (key.clone(), CaseTree::of(sub)))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        Self {
            allowed,
            items,
            properties,
        }
    }

    fn is_empty(&self) -> bool {
        self.allowed.is_empty() && self.items.is_none() && self.properties.is_empty()
    }

    /// The tree below property `key`, if it holds any enum.
    pub fn property(&self, key: &str) -> Option<&CaseTree> {
        self.properties
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, t)| t)
    }

    /// Fixes `value` (found at JSON pointer `at`), pushing the pointer of every value changed.
    /// The pointer is grown and cut back in place: only a changed value needs its own copy.
    pub fn fix(&self, value: &mut Value, at: &mut String, fixed: &mut Vec<String>) {
        match value {
            Value::String(s) => {
                let trimmed = s.trim();
                let hit = self
                    .allowed
                    .iter()
                    .find(|a| a.eq_ignore_ascii_case(trimmed));
                if let Some(hit) = hit
                    && hit != s
                {
                    *s = hit.clone();
                    fixed.push(at.clone());
                }
            }
            Value::Array(list) => {
                if let Some(items) = &self.items {
                    for (i, v) in list.iter_mut().enumerate() {
                        let len = at.len();
                        at.push('/');
                        push_index(at, i);
                        items.fix(v, at, fixed);
                        at.truncate(len);
                    }
                }
            }
            Value::Object(map) => {
                if self.properties.is_empty() {
                    return;
                }
                for (key, v) in map.iter_mut() {
                    if let Some(sub) = self.property(key) {
                        let len = at.len();
                        at.push('/');
                        push_escaped(at, key);
                        sub.fix(v, at, fixed);
                        at.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The tree of `mode`'s published response schema, compiled once per process. The files are
/// embedded at compile time and a unit test compiles them, so `None` is unreachable in practice;
/// it only skips the repair.
pub fn tree(mode: ModeId) -> Option<&'static CaseTree> {
    static TREES: OnceLock<Option<ByMode<CaseTree>>> = OnceLock::new();
    let trees = TREES
        .get_or_init(|| {
            let registry = SchemaRegistry::load().ok()?;
            Some(MODES.map(|id, _| CaseTree::of(registry.mode(id).response.json())))
        })
        .as_ref()?;
    Some(&trees[mode])
}

/// Rewrites every string of `value` that `schema` spells otherwise.
pub fn normalise_enums(schema: &Value, value: &mut Value) {
    fix_enum_case(schema, value, "", &mut Vec::new());
}

/// [`normalise_enums`] below `path`, pushing the JSON pointer of every value it changed.
pub fn fix_enum_case(schema: &Value, value: &mut Value, path: &str, fixed: &mut Vec<String>) {
    CaseTree::of(schema).fix(value, &mut path.to_owned(), fixed);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn only_enum_bearing_parts_are_kept_and_fixed() {
        let schema = json!({"type": "object", "properties": {
            "free": {"type": "string"},
            "level": {"enum": ["high", "low", 3]},
            "kind": {"const": "plan"},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "x/y": {"enum": ["Yes"]}, "note": {"type": "string"}}}},
            "plain": {"type": "array", "items": {"type": "string"}}
        }});
        let tree = CaseTree::of(&schema);
        let kept: Vec<&str> = tree.properties.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kept, ["level", "kind", "list"]);
        let mut value = json!({"free": "HIGH", "level": " High ", "kind": "PLAN",
            "list": [{"x/y": "yes", "note": "YES"}, {"x/y": "Yes"}], "plain": ["high"]});
        let mut fixed = Vec::new();
        tree.fix(&mut value, &mut String::new(), &mut fixed);
        assert_eq!(
            value,
            json!({"free": "HIGH", "level": "high", "kind": "plan",
                "list": [{"x/y": "Yes", "note": "YES"}, {"x/y": "Yes"}], "plain": ["high"]})
        );
        assert_eq!(fixed, ["/level", "/kind", "/list/0/x~1y"]);
    }

    #[test]
    fn every_mode_has_a_tree() {
        for (id, _) in MODES.entries() {
            assert!(tree(id).is_some_and(|t| !t.is_empty()), "{id:?}");
        }
    }
}
