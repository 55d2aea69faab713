//! handle_objections: the costliest objection first, scripts a seller can say word for word,
//! no deadline the caller did not give, and only concessions the caller authorised.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::{holds_phrase, same, word_count, words};
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::Deserialize;

pub const MODE: Mode = Mode {
    id: ModeId::HandleObjections,
    tier: Tier::Flagship,
    summary: "Gives verbatim responses to the objections that kill deals, costliest first.",
    purpose: "gives verbatim responses to deal-killing objections",
    recommended_context: &[
        "offer.price_usd",
        "offer.promise",
        "audience.icp",
        "metrics.close_rate_pct",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HandleObjections {
    /// Ordered by revenue cost, most expensive first.
    #[schemars(length(min = 3, max = 7))]
    pub objections: Vec<Objection>,
    /// The same text as the first objection.
    #[schemars(length(max = 160))]
    pub most_expensive_objection: String,
    #[schemars(length(max = 300))]
    pub pre_empt: String,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub disqualifiers: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Objection {
    #[schemars(length(max = 160))]
    pub objection: String,
    #[schemars(length(max = 240))]
    pub what_they_really_mean: String,
    /// Speakable, under 60 words.
    #[schemars(length(max = 400))]
    pub response_script: String,
    #[schemars(length(max = 240))]
    pub evidence_to_bring: String,
    #[schemars(length(max = 160))]
    pub concession_allowed: Option<String>,
}

/// A response script is said out loud: fewer than this many words.
pub const SCRIPT_WORDS: usize = 60;

impl Deliverable for HandleObjections {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![pattern!(Self: pre_empt), pattern!(Self: disqualifiers[_])],
            facts: vec![pattern!(Self: objections[_].evidence_to_bring)],
            sourced: vec![pattern!(Self: objections[_].concession_allowed)],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let list = &self.objections;
        for (i, o) in list.iter().enumerate() {
            let script = &o.response_script;
            let words = word_count(script);
            if words >= SCRIPT_WORDS {
                push(
                    out,
                    at!(self.objections[i].response_script),
                    format!("must be under {SCRIPT_WORDS} words, has {words}"),
                );
            }
            if let Some(why) = unspeakable(script) {
                push(
                    out,
                    at!(self.objections[i].response_script),
                    format!("must be speakable word for word: {why}"),
                );
            }
            fake_deadline(cx, &at!(self.objections[i].response_script), script, out);
            if let Some(c) = &o.concession_allowed {
                fake_deadline(cx, &at!(self.objections[i].concession_allowed), c, out);
            }
            let at = at!(self.objections[i].concession_allowed);
            match o.concession_allowed.as_deref() {
                Some(c) if c.trim().is_empty() => push(
                    out,
                    at,
                    "must be null when no concession should be offered, not empty",
                ),
                // Only the caller can authorise a concession: its figures are theirs, never a
                // result of `numbers` that happens to match.
                Some(c) => {
                    for f in cx.tracing.figures(c) {
                        if !f.callers {
                            push(
                                out,
                                at.clone(),
                                format!("{} is not a concession the caller authorised", f.shown),
                            );
                        }
                    }
                }
                None => {}
            }
        }
        fake_deadline(cx, &at!(self.pre_empt), &self.pre_empt, out);
        if let Some(first) = list.first()
            && !same(&first.objection, &self.most_expensive_objection)
        {
            push(
                out,
                at!(self.most_expensive_objection),
                "must be the same text as the first objection (objections run most expensive first)",
            );
        }
        distinct(
            list.iter().map(|o| o.objection.as_str()),
            |i| at!(self.objections[i].objection),
            "objection",
            out,
        );
        distinct(
            self.disqualifiers.iter().map(String::as_str),
            |i| at!(self.disqualifiers[i]),
            "disqualifier",
            out,
        );
    }
}

/// Urgency a seller manufactures, as whole-word phrases (prompt: handle_objections, "Scripts are
/// honest: no fake deadlines"). Chosen to be precise rather than broad: pressure formulas
/// ("last chance", "today only", "act now"), a count of places running out ("spots left"),
/// a limit on validity ("only until", "valid until", "by midnight"), and a commercial term
/// ([`DEADLINE_SUBJECTS`]) followed by a verb of ending or rising ([`DEADLINE_VERBS`]):
/// "the offer ends Friday", "this price expires", "the rate goes up". Left out on purpose, since
/// honest scripts use them: the bare words "deadline" ("a filing deadline"), "expires" and
/// "ends" ("when your contract ends"), "today" and weekday names.
const URGENCY: [&str; 22] = [
    "last chance",
    "limited time",
    "today only",
    "only today",
    "tonight only",
    "this week only",
    "only this week",
    "this month only",
    "act now",
    "act fast",
    "while it lasts",
    "while stocks last",
    "won't last",
    "before it's gone",
    "before they're gone",
    "spots left",
    "places left",
    "slots left",
    "only until",
    "valid until",
    "by midnight",
    "before midnight",
];
const DEADLINE_SUBJECTS: [&str; 10] = [
    "offer",
    "deal",
    "discount",
    "price",
    "pricing",
    "rate",
    "promotion",
    "promo",
    "quote",
    "special",
];
const DEADLINE_VERBS: [&str; 10] = [
    "ends",
    "expires",
    "expire",
    "runs out",
    "goes up",
    "go up",
    "increases",
    "is only valid",
    "is only good",
    "closes",
];

/// A deadline in `s` the caller did not give: the same phrase in the caller's own words (a
/// promotion they run, a price rise they announced) makes it theirs, not fake.
fn fake_deadline(cx: &Ctx, path: &str, s: &str, out: &mut Vec<Violation>) {
    // Each text split once: the phrase list below runs to about a hundred entries.
    let (said, caller) = (words(s), words(cx.caller_text));
    let subject_verb = DEADLINE_SUBJECTS
        .iter()
        .flat_map(|n| DEADLINE_VERBS.iter().map(move |v| format!("{n} {v}")));
    let found = URGENCY
        .iter()
        .map(|p| (*p).to_owned())
        .chain(subject_verb)
        .find(|p| holds_phrase(&said, p) && !holds_phrase(&caller, p));
    if let Some(p) = found {
        push(
            out,
            path,
            format!(
                "must be honest: \"{p}\" is a deadline the caller did not give (no fake deadlines)"
            ),
        );
    }
}

/// Why a script cannot be read out as written: brackets (placeholders, asides) or a list.
fn unspeakable(script: &str) -> Option<&'static str> {
    if script.contains(['[', ']', '{', '}', '<', '>', '(', ')']) {
        return Some("no brackets or placeholders");
    }
    let listed = script.lines().skip(1).any(|l| {
        let l = l.trim_start();
        l.starts_with(['-', '*', '•'])
            || l.split_once(['.', ')'])
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    });
    listed.then_some("no lists")
}
