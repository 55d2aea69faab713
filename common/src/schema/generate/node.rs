//! Builders for schema nodes. Each fixes the key order of its node, so the rendered files are
//! deterministic: `type`, then `description`, then bounds, then `items` or `properties`.

use serde_json::{Map, Value, json};

/// Finishing touches on a node built here.
pub trait Node: Sized {
    /// Sets `key` (appended, so call in the order the keys should appear).
    fn set(self, key: &str, value: impl Into<Value>) -> Self;
    /// Sets the description, right after `type` (or first, for a node without one).
    fn d(self, text: &str) -> Self;
}

impl Node for Value {
    fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Some(map) = self.as_object_mut() {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    fn d(mut self, text: &str) -> Self {
        if let Some(map) = self.as_object_mut() {
            let at = usize::from(map.keys().next().is_some_and(|k| k == "type"));
            map.shift_insert(at, "description".to_owned(), Value::from(text));
        }
        self
    }
}

/// A string.
pub fn s() -> Value {
    json!({"type": "string"})
}

/// A string of at most `max` characters.
pub fn sm(max: usize) -> Value {
    s().set("maxLength", max)
}

/// A non-empty string.
pub fn ne() -> Value {
    s().set("minLength", 1)
}

/// A non-empty string of at most `max` characters.
pub fn nem(max: usize) -> Value {
    ne().set("maxLength", max)
}

pub fn num() -> Value {
    json!({"type": "number"})
}

/// A number that is never negative.
pub fn non_negative() -> Value {
    num().set("minimum", 0)
}

pub fn int() -> Value {
    json!({"type": "integer"})
}

/// An integer from `min` to `max`.
pub fn int_range(min: i64, max: i64) -> Value {
    int().set("minimum", min).set("maximum", max)
}

/// A string from a fixed list.
pub fn one_of<S: AsRef<str>>(values: &[S]) -> Value {
    let values: Vec<&str> = values.iter().map(AsRef::as_ref).collect();
    json!({"type": "string", "enum": values})
}

/// Exactly `value`.
pub fn constant(value: impl Into<Value>) -> Value {
    json!({"const": value.into()})
}

/// An array of `min` (omitted when 0) to `max` items.
pub fn arr(items: Value, min: usize, max: Option<usize>) -> Value {
    let mut node = json!({"type": "array"});
    if min > 0 {
        node = node.set("minItems", min);
    }
    if let Some(max) = max {
        node = node.set("maxItems", max);
    }
    node.set("items", items)
}

/// An array of `min` to `max` items.
pub fn list(items: Value, min: usize, max: usize) -> Value {
    arr(items, min, Some(max))
}

/// An array of at most `max` items.
pub fn up_to(items: Value, max: usize) -> Value {
    arr(items, 0, Some(max))
}

/// A closed object whose every property is required (the response style). `props` is a JSON
/// object; its key order is kept.
pub fn obj(props: Value) -> Value {
    let required: Vec<String> = props
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    closed(props, &required)
}

/// A closed object requiring only `required` (the request style).
pub fn obj_with(props: Value, required: &[&str]) -> Value {
    let required: Vec<String> = required.iter().map(|&r| r.to_owned()).collect();
    closed(props, &required)
}

fn closed(props: Value, required: &[String]) -> Value {
    let mut node = Map::new();
    node.insert("type".into(), "object".into());
    if !required.is_empty() {
        node.insert("required".into(), json!(required));
    }
    node.insert("properties".into(), props);
    node.insert("additionalProperties".into(), false.into());
    Value::Object(node)
}
