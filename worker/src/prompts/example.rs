//! One compact example answer per mode, drawn from the mode's sandbox sample
//! (`common/src/sandbox/{mode}.json`) at run time, so the examples follow the samples and are
//! never written twice. It goes in the system prompt, after the rules, rather than as a made-up
//! earlier turn: a prior turn would read as something this caller said.
//!
//! Compact means: the model's keys only, in the order the model writes them; the first
//! paragraph of `reply`; the first two `numbers` (a later item may build on an earlier one,
//! never the reverse); one action and one caveat; the deliverable whole, because its shape is
//! what the example is for and its cross-references must stay consistent.

use crate::envelope::{MODEL_ORDER, SERVER_KEYS};
use grove_common::catalog::{self, ByMode, MODES, Mode};
use grove_common::sandbox;
use serde_json::{Map, Value};
use std::sync::LazyLock;

const NUMBERS_SHOWN: usize = 2;

/// Each mode's block, made once: it depends on the mode alone, and reading and shortening the
/// sample was 2 % of a paid call's CPU (issue 12).
static BLOCKS: LazyLock<ByMode<Option<String>>> = LazyLock::new(|| MODES.map(|_, m| make(m)));

/// The example block for `mode`, or `None` if its sample cannot be read (a unit test reads
/// every one, so that does not happen in practice).
pub(super) fn block(mode: &Mode) -> Option<&'static str> {
    BLOCKS[mode.id].as_deref()
}

fn make(mode: &Mode) -> Option<String> {
    let coach = catalog::coaches_offering(mode.id).next()?;
    let sample = sandbox::coaching_sample(coach, mode).ok()?;
    let compact = compact(&sample)?;
    Some(format!(
        "# Example answer for this mode\n\n\
         Written for a different business, and shortened: only the first paragraph of the \
         reply, fewer list items. It shows the shape, the level of detail and the tone. Its \
         `numbers` come from that caller's figures; yours follow the rules above. Never reuse \
         its facts, figures or names: every figure and name you write comes from this \
         caller.\n\n{compact}\n"
    ))
}

/// The sample as the model would write it, shortened.
fn compact(sample: &Value) -> Option<String> {
    let obj = sample.as_object()?;
    let mut out = Map::new();
    for key in MODEL_ORDER {
        let Some(value) = obj.get(key) else { continue };
        let value = match key {
            "reply" => Value::String(first_paragraph(value.as_str()?).to_owned()),
            "numbers" => first(value, NUMBERS_SHOWN),
            "actions" | "caveats" => first(value, 1),
            // The server lists the dotted fields itself; the model adds plain-word gaps only.
            "context_gaps" => Value::Array(
                value
                    .as_array()?
                    .iter()
                    .filter(|g| g.as_str().is_some_and(|g| g.contains(' ')))
                    .cloned()
                    .collect(),
            ),
            _ => value.clone(),
        };
        out.insert(key.to_owned(), value);
    }
    debug_assert!(SERVER_KEYS.iter().all(|k| !out.contains_key(*k)));
    serde_json::to_string(&Value::Object(out)).ok()
}

fn first(list: &Value, n: usize) -> Value {
    Value::Array(
        list.as_array()
            .map(|l| l.iter().take(n).cloned().collect())
            .unwrap_or_default(),
    )
}

fn first_paragraph(text: &str) -> &str {
    text.split("\n\n").next().unwrap_or(text).trim()
}
