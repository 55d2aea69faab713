//! funnel_review: rates that trace, a biggest leak that is one of the stages, and no traffic
//! before the leak is fixed.

use super::shared::{Ctx, distinct};
use crate::envelope::figures::Figure;
use crate::envelope::text::{at, has_any, items, push, text};
use grove_common::schema::Violation;
use serde_json::Value;

/// Moves that buy more traffic, which must wait while a later stage leaks most.
const MORE_TRAFFIC: [&str; 8] = [
    "more traffic",
    "more leads",
    "more visitors",
    "ad spend",
    "more ads",
    "buy ads",
    "increase traffic",
    "drive traffic",
];

pub fn funnel(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let stages = items(d.get("stages"));
    for (i, s) in stages.iter().enumerate() {
        let Some(pct) = s.get("estimated_conversion_pct").and_then(Value::as_f64) else {
            continue;
        };
        let shown = Figure {
            value: pct,
            half_step: 0.5,
            percent: true,
            currency: false,
        };
        if !cx.pool.cited.iter().any(|k| k.matches(&shown)) {
            push(
                out,
                format!("/deliverable/stages/{i}/estimated_conversion_pct"),
                "must follow from the caller's figures (show it in `numbers`) or be null",
            );
        }
    }
    distinct(stages, Some("stage"), "/deliverable/stages", "stage", out);
    // The biggest leak names one of the stages: by its name or by a word only that stage has.
    let leak = text(d, "biggest_leak").unwrap_or_default();
    let names: Vec<&str> = stages.iter().filter_map(|s| text(s, "stage")).collect();
    let hit = names.iter().position(|n| leak_names(leak, n, &names));
    if !leak.is_empty() && !names.is_empty() && hit.is_none() {
        push(
            out,
            "/deliverable/biggest_leak",
            "must name one of stages[].stage",
        );
    }
    let lever = at(cx.envelope, "/thinking/lever").unwrap_or_default();
    if hit.is_some_and(|i| i > 0) && has_any(lever, &MORE_TRAFFIC) {
        push(
            out,
            "/thinking/lever",
            "must fix the biggest leak before buying more traffic",
        );
    }
}

fn leak_names(leak: &str, stage: &str, all: &[&str]) -> bool {
    use crate::envelope::text::content_words;
    let leak_words = content_words(leak);
    if content_words(stage).iter().all(|w| leak_words.contains(w)) {
        return true;
    }
    // A word of this stage that no other stage uses ("held", "show") identifies it.
    let others: Vec<String> = all
        .iter()
        .filter(|s| **s != stage)
        .flat_map(|s| content_words(s))
        .collect();
    content_words(stage)
        .iter()
        .any(|w| !others.contains(w) && leak_words.contains(w))
}
