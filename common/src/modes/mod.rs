//! One module per mode: `modes/<id>.rs` holds everything Grove knows about that mode:
//!
//! - its catalog entry (`MODE`: tier, summaries, recommended context);
//! - its deliverable as Rust types, with the bounds the published schema states (a field's
//!   `#[schemars(length(..), range(..))]`; its doc comment is its published description);
//! - where each text's figures must come from ([`Deliverable::kinds`]);
//! - the rules a JSON Schema cannot state ([`Deliverable::check`]), written against those types,
//!   with pointers built from field accesses ([`path`]): renaming a field breaks at compile time
//!   everywhere it is read.
//!
//! The published schemas (`schemas/`) take each deliverable's schema from its type
//! ([`Rules::schema`]); the worker checks an answer with [`rules`]. Besides the module, a mode
//! has its instructions (`worker/prompts/modes/<id>.md`) and its sandbox sample
//! (`common/src/sandbox/<id>.json`). Adding one is described in `docs/modes.md`.

pub(crate) mod path;
mod rules;
mod schema;
pub mod words;

pub use rules::{Ctx, Source, Thinking, Tracing, Written, strings};

use crate::catalog::ids::{ByMode, ModeId};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;

/// `pub mod <id>;` for each mode of the list.
macro_rules! declare {
    ($($variant:ident $id:ident),* $(,)?) => {
        $(pub mod $id;)*
    };
}

crate::modes!(declare!());

/// A mode's deliverable type: parsed from the model's answer, then checked.
pub trait Deliverable: DeserializeOwned + JsonSchema {
    /// How the figures of each text are traced.
    fn kinds() -> Kinds {
        Kinds::default()
    }

    /// The mode's rules that a schema cannot state, each violation at its pointer.
    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>);

    /// True when the answer itself says the caller gave too little to judge: its confidence is
    /// then low, whatever the caller's context covers.
    fn low_confidence(&self) -> bool {
        false
    }
}

/// How the figures of a deliverable text are traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// The coach's own proposal (a target, a trigger, a plan, the wording of an offer): its
    /// figures need not trace.
    Proposal,
    /// A statement of the caller's facts: every figure traces, with no proposal allowance.
    Fact,
    /// Traced by its item's `source` in the mode's rules ([`Tracing::sourced`]).
    Sourced,
    /// Ordinary prose: figures trace, or are proposals introduced by a target word.
    Prose,
}

/// Per mode, patterns of deliverable fields (relative to the deliverable, `*` for any key or
/// index), written with [`path::pattern`] so that they name real fields.
#[derive(Clone, Debug, Default)]
pub struct Kinds {
    pub proposals: Vec<&'static str>,
    pub facts: Vec<&'static str>,
    pub sourced: Vec<&'static str>,
    /// Numbers the deliverable types that are not the coach's own (a stage's estimated
    /// conversion): they must trace themselves, and prose may not cite them as typed.
    pub traced_numbers: Vec<&'static str>,
}

impl Kinds {
    /// The kind of the deliverable text at `pointer` (relative to the deliverable).
    pub fn of(&self, pointer: &str) -> FieldKind {
        if hits(&self.sourced, pointer) {
            FieldKind::Sourced
        } else if hits(&self.proposals, pointer) {
            FieldKind::Proposal
        } else if hits(&self.facts, pointer) {
            FieldKind::Fact
        } else {
            FieldKind::Prose
        }
    }

    /// True when the number at `pointer` must trace rather than count as the coach's own.
    pub fn is_traced_number(&self, pointer: &str) -> bool {
        hits(&self.traced_numbers, pointer)
    }
}

fn hits(patterns: &[&str], pointer: &str) -> bool {
    let parts: Vec<&str> = pointer.split('/').collect();
    patterns.iter().any(|p| {
        let pat: Vec<&str> = p.split('/').collect();
        pat.len() == parts.len() && pat.iter().zip(&parts).all(|(a, b)| *a == "*" || a == b)
    })
}

/// A deliverable that does not have its mode's type: the rules could not be checked.
#[derive(Debug, thiserror::Error)]
#[error("must be a {mode} deliverable: {source}")]
pub struct Shape {
    mode: &'static str,
    source: serde_json::Error,
}

/// A mode's deliverable as the schema generator and the worker use it, whatever its type.
pub trait Rules: Sync {
    /// The deliverable's published schema (without its description).
    fn schema(&self) -> Value;
    fn kinds(&self) -> Kinds;
    /// Parses `cx.deliverable` and checks it. `Err` when it does not have the mode's type (the
    /// published schema names why); no rule ran then.
    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) -> Result<(), Shape>;
    /// [`Deliverable::low_confidence`] of `deliverable`, false when it does not parse.
    fn low_confidence(&self, deliverable: &Value) -> bool;
}

/// [`Rules`] for the deliverable type `D` of the mode `id`.
pub struct Typed<D> {
    id: &'static str,
    deliverable: PhantomData<fn() -> D>,
}

impl<D> Typed<D> {
    pub const fn new(id: &'static str) -> Self {
        Self {
            id,
            deliverable: PhantomData,
        }
    }
}

impl<D: Deliverable> Typed<D> {
    fn parse(&self, raw: &Value) -> Result<D, Shape> {
        D::deserialize(raw)
            .or_else(|first| {
                // JSON Schema's "integer" takes 3.0; serde's i64 does not.
                let mut whole = raw.clone();
                if integral_floats(&mut whole) {
                    D::deserialize(&whole)
                } else {
                    Err(first)
                }
            })
            .map_err(|source| Shape {
                mode: self.id,
                source,
            })
    }
}

impl<D: Deliverable> Rules for Typed<D> {
    fn schema(&self) -> Value {
        schema::of::<D>()
    }

    fn kinds(&self) -> Kinds {
        D::kinds()
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) -> Result<(), Shape> {
        self.parse(cx.deliverable)?.check(cx, out);
        Ok(())
    }

    fn low_confidence(&self, deliverable: &Value) -> bool {
        self.parse(deliverable).is_ok_and(|d| d.low_confidence())
    }
}

/// Turns every float with no fraction into an integer; true if any was.
fn integral_floats(v: &mut Value) -> bool {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                // An f64 with no fraction below 2^53 is exactly this integer.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *v = Value::from(i);
                true
            }
            _ => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |a, x| integral_floats(x) | a),
        Value::Object(map) => map.values_mut().fold(false, |a, x| integral_floats(x) | a),
        _ => false,
    }
}

macro_rules! table {
    ($($variant:ident $id:ident),* $(,)?) => {
        ByMode::new([$(
            &Typed::<$id::$variant> {
                id: stringify!($id),
                deliverable: PhantomData,
            } as &dyn Rules
        ),*])
    };
}

static RULES: ByMode<&'static dyn Rules> = crate::modes!(table!());

/// The deliverable of `mode`.
pub fn rules(mode: ModeId) -> &'static dyn Rules {
    RULES[mode]
}

#[cfg(test)]
mod tests;
