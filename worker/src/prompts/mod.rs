//! Prompts as files under version control (`worker/prompts/`), embedded at compile time, and the
//! assembly of one call's system prompt and conversation.
//!
//! The system prompt, in order: the coach's persona; the mode's instructions (for
//! `diagnose_growth`, the coach's lens mapped onto `binding_constraint`); the answer's keys; the
//! honesty rules; this tier's limits; one compact example answer drawn from the mode's sandbox
//! sample (see `example`); and what this caller gave.

mod example;
mod shared;

use crate::envelope::{Caller, Confidence};
use grove_common::catalog::{self, ByCoach, ByMode, Coach, CoachId, Mode, ModeId};
use grove_common::requests::{CoachingRequest, Role};
use std::sync::Arc;

/// Embeds `prompts/{dir}/{id}.md` for each id of a list macro, as a table of that list's type.
macro_rules! embedded {
    ($table:ident $dir:literal: $($variant:ident $id:ident),* $(,)?) => {
        $table::new([$(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/prompts/", $dir, "/", stringify!($id), ".md"
            )),
        )*])
    };
}

static HONESTY: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/honesty.md"));
static ENVELOPE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/envelope.md"));

/// One persona per coach.
static COACHES: ByCoach<&str> = grove_common::coaches!(embedded!(ByCoach "coaches":));

/// How each coach's specialty maps onto the five `binding_constraint` values (`diagnose_growth`).
static LENSES: ByCoach<&str> = grove_common::coaches!(embedded!(ByCoach "lenses":));

/// Instructions per mode.
static MODES: ByMode<&str> = grove_common::modes!(embedded!(ByMode "modes":));

/// Role of a conversation turn, as the provider APIs spell it.
pub const USER: &str = "user";
pub const ASSISTANT: &str = "assistant";

/// The system prompt and the conversation for one coaching call, from what the caller gave as
/// [`Caller`] worked it out once (missing fields, figures, ceiling).
///
/// The conversation always starts and ends with a user turn: Anthropic reads a trailing
/// assistant turn as a prefill, which structured output refuses.
///
/// The system prompt is shared with every call in flight that has the same [`Key`].
pub fn build(
    coach: &Coach,
    mode: &Mode,
    caller: &Caller,
) -> (Arc<str>, Vec<(&'static str, String)>) {
    let key = Key {
        coach: coach.id,
        mode: mode.id,
        missing: caller.missing.clone(),
        gave_numbers: caller.gave_numbers(),
        ceiling: caller.ceiling,
    };
    (
        shared::SYSTEM.get(key, system),
        conversation(caller.request),
    )
}

/// Everything a system prompt is made from: [`system`] reads nothing else, so two calls with
/// equal keys can share one text.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    coach: CoachId,
    mode: ModeId,
    missing: Vec<&'static str>,
    gave_numbers: bool,
    ceiling: Confidence,
}

fn system(key: &Key) -> String {
    let (coach, mode) = (catalog::coach(key.coach), catalog::mode(key.mode));
    let (missing, ceiling) = (&key.missing, key.ceiling);
    let caps = mode.tier.caps();
    let coach_summary = coach
        .modes
        .iter()
        .find(|m| m.mode == mode.id)
        .map_or(mode.summary, |m| m.summary);
    let gaps = if missing.is_empty() {
        "All recommended context fields were given.".to_owned()
    } else {
        format!(
            "Recommended context fields the caller did not fill in: {}. The server lists these \
             in `context_gaps` itself; do not repeat them there. Use a value only if the \
             messages state it; never guess one.",
            missing.join(", ")
        )
    };
    let figures = if key.gave_numbers {
        "The caller gave figures: use only those (and arithmetic on them) in `numbers`."
    } else {
        "The caller gave no figures at all: `numbers` must be [] and the reply must not state any \
         figure about their business."
    };
    let lens = match mode.id {
        ModeId::DiagnoseGrowth => format!("\n{}", LENSES[coach.id]),
        _ => String::new(),
    };
    let example = example::block(mode)
        .map(|e| format!("\n{e}"))
        .unwrap_or_default();
    format!(
        "{persona}\n\nIn this call you coach in the mode below. Your summary of it: {coach_summary}\n\n\
         {mode_text}{lens}\n{envelope}\n{honesty}\n\
         # Limits for this answer ({tier} tier)\n\n\
         - `reply`: at most {reply} characters; aim for under {words} words.\n\
         - `numbers`: at most {numbers} items.\n\
         - `actions`: {amin} to {amax} items, each with 1 to 6 steps.\n\
         - `caveats`: at most {caveats} items, one sentence each.\n\
         - `context_gaps`: at most 3 items of your own.\n\
         {example}\n\
         # What the caller gave\n\n\
         - {gaps}\n\
         - {figures}\n\
         - Confidence ceiling: `{ceiling}`. `thinking.confidence` must not be higher.\n",
        persona = COACHES[coach.id].trim_end(),
        mode_text = MODES[mode.id],
        envelope = ENVELOPE,
        honesty = HONESTY,
        tier = mode.tier.as_str(),
        reply = caps.reply_max_chars,
        words = caps.reply_word_target,
        numbers = caps.numbers_max,
        amin = caps.actions_min,
        amax = caps.actions_max,
        caveats = caps.caveats_max,
        ceiling = ceiling.as_str(),
    )
}

/// The caller's messages, with the caller's context as a compact JSON block at the top of the
/// first user turn (or in a turn of its own when the conversation opens with an assistant turn).
fn conversation(request: &CoachingRequest) -> Vec<(&'static str, String)> {
    let mut turns: Vec<(&'static str, String)> = request
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::Assistant => ASSISTANT,
                Role::User => USER,
            };
            (role, m.content.clone())
        })
        .collect();

    // Shown as the caller's JSON (the type writes it back as sent); an empty object says nothing.
    let context = request
        .context
        .as_ref()
        .and_then(|c| serde_json::to_string(c).ok())
        .filter(|c| c != "{}");
    if let Some(context) = context {
        let block = format!("Business context (JSON, from the caller):\n{context}");
        match turns.first_mut() {
            Some((role, content)) if *role == USER => *content = format!("{block}\n\n{content}"),
            _ => turns.insert(0, (USER, block)),
        }
    } else if turns.first().is_none_or(|(role, _)| *role != USER) {
        turns.insert(0, (USER, "(The conversation so far follows.)".to_owned()));
    }
    if turns.last().is_some_and(|(role, _)| *role == ASSISTANT) {
        turns.push((USER, "Continue as my coach and answer now.".to_owned()));
    }
    turns
}

#[cfg(test)]
mod tests;
