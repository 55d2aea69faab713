//! A deliverable type's published JSON Schema, from its derive: bounds from its `#[schemars]`
//! attributes, descriptions from its fields' doc comments, then put in the published form
//! (see `schema::generate`): every property required, every object closed, no `$ref`, no
//! titles or number formats, keys in the fixed order the other builders use.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value};

/// The order of a node's keys, as `schema::generate::node` writes them.
const ORDER: [&str; 15] = [
    "type",
    "description",
    "required",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "items",
    "properties",
    "additionalProperties",
];

/// The published schema of `D`, without a description of its own.
pub fn of<D: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<D>().to_value();
    tidy(&mut schema);
    if let Value::Object(map) = &mut schema {
        map.remove("description");
    }
    schema
}

fn tidy(node: &mut Value) {
    let Value::Object(map) = node else {
        return;
    };
    for key in ["$schema", "title", "format"] {
        map.remove(key);
    }
    // A doc comment's lines are joined with line breaks; the published text is one line.
    if let Some(Value::String(d)) = map.get_mut("description") {
        *d = d.replace('\n', " ");
    }
    if let Some(items) = map.get_mut("items") {
        tidy(items);
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(tidy);
        let required: Vec<Value> = props.keys().cloned().map(Value::from).collect();
        map.insert("required".into(), Value::Array(required));
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    let mut ordered = Map::new();
    for key in ORDER {
        if let Some(v) = map.remove(key) {
            ordered.insert(key.to_owned(), v);
        }
    }
    // Anything else (none today) keeps its place after the known keys.
    ordered.append(map);
    *map = ordered;
}
