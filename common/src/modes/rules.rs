//! What a mode's rules see besides their typed deliverable ([`Ctx`]), the figure tracing they ask
//! of the worker ([`Tracing`]), and the helpers several modes share.

use super::words;
use crate::requests::CoachingRequest;
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    CallerSupplied,
    DerivedFromCallerInputs,
    NotProvided,
}

/// One figure written in a text, as the worker's figure reader sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    pub value: f64,
    /// Written as a rate ("12%", "12 percent").
    pub percent: bool,
    /// One of the caller's own figures (from their context or messages).
    pub callers: bool,
    /// As a message shows it: "4500", "16.8%".
    pub shown: String,
}

/// The figure tracing the worker does for the whole envelope (`envelope::prose`, `figures`),
/// offered to the modes' rules: what the caller gave and what `numbers` shows stay the worker's
/// to work out, once per answer, and the rules only ask.
pub trait Tracing {
    /// Problems at `path` for each figure of `text` that neither the caller gave nor `numbers`
    /// shows, with no allowance for proposals: a statement of fact.
    fn trace(&self, path: &str, text: &str, out: &mut Vec<Violation>);
    /// CONTRACT 8's SRC rule for a text tagged with `source`: `caller_supplied` holds only the
    /// caller's own figures, `derived_from_caller_inputs` traces like a fact, `not_provided`
    /// holds no figure, and "unknown" is only ever `not_provided`.
    fn sourced(&self, path: &str, source: Source, text: &str, out: &mut Vec<Violation>);
    /// True when the caller's figures or `numbers` show the rate `pct` % (to its last digit).
    fn shows_rate(&self, pct: f64) -> bool;
    /// The figures written in `text`, in order.
    fn figures(&self, text: &str) -> Vec<Written>;
}

/// The envelope's own reasoning, as far as the model wrote it as text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Thinking<'a> {
    pub diagnosis: Option<&'a str>,
    pub lever: Option<&'a str>,
    pub confidence: Option<&'a str>,
}

impl Thinking<'_> {
    pub const DIAGNOSIS: &'static str = "/thinking/diagnosis";
    pub const LEVER: &'static str = "/thinking/lever";
    pub const CONFIDENCE: &'static str = "/thinking/confidence";
}

/// What a mode's rules may look at besides the deliverable. Every part is read defensively: the
/// model wrote it, and the published schema judges its shape separately.
pub struct Ctx<'a> {
    /// The deliverable as written, for the rules that scan all of its text.
    pub deliverable: &'a Value,
    pub thinking: Thinking<'a>,
    /// The caveats that are strings.
    pub caveats: Vec<&'a str>,
    /// The paid request as the caller sent it.
    pub request: &'a CoachingRequest,
    /// The caller's words (user messages and context strings), for "the caller said it" rules.
    pub caller_text: &'a str,
    pub tracing: &'a dyn Tracing,
}

impl<'a> Ctx<'a> {
    /// The context of `envelope` (an assembled answer).
    pub fn new(
        envelope: &'a Value,
        request: &'a CoachingRequest,
        caller_text: &'a str,
        tracing: &'a dyn Tracing,
    ) -> Self {
        let text = |pointer: &str| envelope.pointer(pointer).and_then(Value::as_str);
        Self {
            deliverable: envelope.get("deliverable").unwrap_or(&Value::Null),
            thinking: Thinking {
                diagnosis: text(Thinking::DIAGNOSIS),
                lever: text(Thinking::LEVER),
                confidence: text(Thinking::CONFIDENCE),
            },
            caveats: envelope
                .get("caveats")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect(),
            request,
            caller_text,
            tracing,
        }
    }

    /// Every text of the deliverable with its pointer in the envelope, in document order.
    pub fn texts(&self) -> Vec<(String, &'a str)> {
        let mut out = Vec::new();
        strings(self.deliverable, "/deliverable", &mut out);
        out
    }

    /// True when some caveat holds one of `verbs` and one of `topics` (as whole words).
    pub fn caveat_says(&self, verbs: &[&str], topics: &[&str]) -> bool {
        self.caveats
            .iter()
            .any(|c| words::has_any(c, verbs) && words::has_any(c, topics))
    }
}

/// Every string leaf under `value` with its JSON pointer (below `at`), in document order.
pub fn strings<'a>(value: &'a Value, at: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(s) => out.push((at.to_owned(), s)),
        Value::Array(list) => {
            for (i, v) in list.iter().enumerate() {
                strings(v, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                strings(v, &format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

pub fn push(out: &mut Vec<Violation>, path: impl Into<String>, message: impl Into<String>) {
    out.push(Violation::new(path.into(), message));
}

/// Names in a list that repeat (after [`words::same`]), reported at the later item's `path`.
pub fn distinct<S: AsRef<str>>(
    names: impl IntoIterator<Item = S>,
    path: impl Fn(usize) -> String,
    what: &str,
    out: &mut Vec<Violation>,
) {
    let names: Vec<S> = names.into_iter().collect();
    for (i, name) in names.iter().enumerate() {
        if names[..i]
            .iter()
            .any(|n| words::same(n.as_ref(), name.as_ref()))
        {
            push(
                out,
                path(i),
                format!("repeats an earlier {what}: each must be different"),
            );
        }
    }
}

/// An enum value as published ("insufficient_data").
pub fn name(value: impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// "unknown" (or a sentence starting with it): the text admits the figure is not known.
pub fn unknown(s: &str) -> bool {
    s.trim().to_lowercase().starts_with("unknown")
}
