//! handle_objections and position_against_alternatives.

use super::shared::{Ctx, distinct};
use crate::envelope::figures;
use crate::envelope::text::{
    at, content_words, holds_phrase, items, push, same, text, word_count, words,
};
use crate::envelope::trace::display;
use grove_common::schema::Violation;

/// A response script is said out loud: fewer than this many words.
pub const SCRIPT_WORDS: usize = 60;

pub fn objections(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let list = items(d.get("objections"));
    for (i, o) in list.iter().enumerate() {
        let path = format!("/deliverable/objections/{i}/response_script");
        if let Some(script) = text(o, "response_script") {
            let words = word_count(script);
            if words >= SCRIPT_WORDS {
                push(
                    out,
                    path.clone(),
                    format!("must be under {SCRIPT_WORDS} words, has {words}"),
                );
            }
            if let Some(why) = unspeakable(script) {
                push(out, path, format!("must be speakable word for word: {why}"));
            }
        }
        for field in ["response_script", "concession_allowed"] {
            if let Some(s) = text(o, field) {
                fake_deadline(cx, &format!("/deliverable/objections/{i}/{field}"), s, out);
            }
        }
        let at = format!("/deliverable/objections/{i}/concession_allowed");
        match text(o, "concession_allowed") {
            Some(c) if c.trim().is_empty() => push(
                out,
                at,
                "must be null when no concession should be offered, not empty",
            ),
            // Only the caller can authorise a concession: its figures are theirs, never a
            // result of `numbers` that happens to match.
            Some(c) => {
                for f in figures::extract(c) {
                    if !cx.caller.iter().any(|k| k.matches(&f)) {
                        push(
                            out,
                            at.clone(),
                            format!("{} is not a concession the caller authorised", display(&f)),
                        );
                    }
                }
            }
            None => {}
        }
    }
    if let Some(s) = text(d, "pre_empt") {
        fake_deadline(cx, "/deliverable/pre_empt", s, out);
    }
    let first = at(d, "/objections/0/objection");
    if let (Some(first), Some(top)) = (first, text(d, "most_expensive_objection"))
        && !same(first, top)
    {
        push(
            out,
            "/deliverable/most_expensive_objection",
            "must be the same text as the first objection (objections run most expensive first)",
        );
    }
    distinct(
        list,
        Some("objection"),
        "/deliverable/objections",
        "objection",
        out,
    );
    distinct(
        items(d.get("disqualifiers")),
        None,
        "/deliverable/disqualifiers",
        "disqualifier",
        out,
    );
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

pub fn position(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let alternatives = items(d.get("alternatives"));
    let names: Vec<&str> = alternatives
        .iter()
        .filter_map(|a| text(a, "name"))
        .collect();
    if let Some(against) = at(d, "/wedge/against")
        && !names.iter().any(|n| same(n, against))
    {
        push(
            out,
            "/deliverable/wedge/against",
            "must be one of alternatives[].name",
        );
    }
    distinct(
        alternatives,
        Some("name"),
        "/deliverable/alternatives",
        "alternative",
        out,
    );
    let said = content_words(cx.caller_text);
    for (i, a) in items(d.get("unique_attributes")).iter().enumerate() {
        if text(a, "proof") != Some("caller_stated") {
            continue;
        }
        let attribute = text(a, "attribute").unwrap_or_default();
        if !content_words(attribute).iter().any(|w| said.contains(w)) {
            push(
                out,
                format!("/deliverable/unique_attributes/{i}/proof"),
                "is caller_stated, but the caller said nothing like this attribute: use observable or needs_evidence",
            );
        }
    }
}
