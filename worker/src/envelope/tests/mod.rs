//! Tests that drive the envelope code with the sandbox samples: realistic, valid envelopes
//! written by hand, each paired here with an imaginary caller whose figures they use.

mod assembly;
mod coverage;
mod honesty;
mod modes;
mod modes_ops;
mod prompt_rules;
mod rules;
mod samples;
mod schemas;

use grove_common::catalog::{self, CoachId, MODES, Mode, ModeId};
use grove_common::requests::CoachingRequest;
use grove_common::sandbox;
use grove_common::schema::{SchemaRegistry, Violation};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Per mode: the context and the message of the caller the sample answers.
static CALLERS: &str = include_str!("callers.json");

pub fn registry() -> &'static SchemaRegistry {
    static REGISTRY: OnceLock<SchemaRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| SchemaRegistry::load().unwrap())
}

/// A mode named in a test: its id string or its `ModeId`.
pub trait AsMode: Copy {
    fn mode_id(self) -> ModeId;
}

impl AsMode for &str {
    fn mode_id(self) -> ModeId {
        ModeId::parse(self).unwrap()
    }
}

impl AsMode for ModeId {
    fn mode_id(self) -> ModeId {
        self
    }
}

pub fn mode(id: impl AsMode) -> &'static Mode {
    catalog::mode(id.mode_id())
}

/// The sandbox envelope of `mode_id` as a paid answer: no `sandbox` flag.
pub fn sample(mode_id: impl AsMode) -> Value {
    let m = mode(mode_id);
    let coach = catalog::coaches_offering(m.id).next().unwrap();
    let mut s = sandbox::coaching_sample(coach, m).unwrap();
    s.as_object_mut().unwrap().remove("sandbox");
    s
}

/// The request of the caller `mode_id`'s sample answers, as the worker reads it.
pub fn request(mode_id: impl AsMode) -> CoachingRequest {
    typed(request_json(mode_id))
}

/// A request body as the worker reads it back from its call (the API stored it from this type).
pub fn typed(body: Value) -> CoachingRequest {
    grove_common::requests::from_stored(&body).expect("a coaching request")
}

/// The request of the caller `mode_id`'s sample answers, as sent.
pub fn request_json(mode_id: impl AsMode) -> Value {
    let mode_id = mode_id.mode_id().as_str();
    let callers: Value = serde_json::from_str(CALLERS).unwrap();
    let caller = &callers[mode_id];
    assert!(caller.is_object(), "no caller fixture for {mode_id}");
    json!({
        "mode": mode_id,
        "messages": [{"role": "user", "content": caller["message"]}],
        "context": caller["context"],
    })
}

/// The part of an envelope the model writes, with only its own extra gaps.
pub fn model_part(envelope: &Value) -> Value {
    let mut out = envelope.clone();
    let obj = out.as_object_mut().unwrap();
    for key in ["agent", "mode", "usage", "receipt", "sandbox"] {
        obj.remove(key);
    }
    let gaps: Vec<Value> = obj["context_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g.as_str().unwrap().contains(' '))
        .cloned()
        .collect();
    obj.insert("context_gaps".into(), Value::Array(gaps));
    out
}

pub fn all_modes() -> impl Iterator<Item = &'static Mode> {
    MODES.iter()
}

pub fn paths(v: &[Violation]) -> Vec<&str> {
    v.iter().map(|v| v.path.as_str()).collect()
}
