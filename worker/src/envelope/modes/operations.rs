//! plan_capacity, draft_sop, decide_stack and map_automation.

use super::shared::{Ctx, distinct, sourced};
use crate::envelope::text::{
    at, content_words, has_any, int, items, push, same, strings, text, words,
};
use grove_common::schema::Violation;
use serde_json::Value;

fn unknown(s: &str) -> bool {
    s.trim().to_lowercase().starts_with("unknown")
}

pub fn capacity(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let verdict = text(d, "verdict");
    let constraints = items(d.get("constraints"));
    let statuses: Vec<&str> = constraints
        .iter()
        .filter_map(|c| text(c, "status"))
        .collect();
    if verdict == Some("insufficient_data")
        && at(cx.envelope, "/thinking/confidence").is_some_and(|c| c != "low")
    {
        push(
            out,
            "/thinking/confidence",
            "must be low when verdict is insufficient_data",
        );
    }
    let need = match verdict {
        Some("insufficient_data") if !statuses.contains(&"unknown") => {
            Some("insufficient_data needs at least one constraint with status unknown")
        }
        Some("absorbs_growth") if statuses.contains(&"over_limit") => {
            Some("absorbs_growth cannot have a constraint over_limit")
        }
        Some("cannot_absorb") if !statuses.contains(&"over_limit") => {
            Some("cannot_absorb needs a constraint over_limit")
        }
        Some("absorbs_with_changes")
            if !statuses
                .iter()
                .any(|s| matches!(*s, "at_limit" | "over_limit")) =>
        {
            Some("absorbs_with_changes needs a constraint at_limit or over_limit")
        }
        _ => None,
    };
    if let Some(need) = need {
        push(
            out,
            "/deliverable/verdict",
            format!("must agree with the constraints: {need}"),
        );
    }
    for (i, c) in constraints.iter().enumerate() {
        let base = format!("/deliverable/constraints/{i}");
        sourced(cx, c, &base, &["capacity", "demand_at_target"], out);
        let blind = ["capacity", "demand_at_target"]
            .iter()
            .any(|k| text(c, k).is_some_and(unknown));
        if blind && text(c, "status").is_some_and(|s| s != "unknown") {
            push(
                out,
                format!("{base}/status"),
                "must be unknown while capacity or demand_at_target is unknown",
            );
        }
    }
    distinct(
        constraints,
        Some("resource"),
        "/deliverable/constraints",
        "resource",
        out,
    );
    distinct(
        items(d.get("levers")),
        Some("lever"),
        "/deliverable/levers",
        "lever",
        out,
    );
    if let Some(b) = text(d, "bottleneck").filter(|b| !unknown(b)) {
        let bw = content_words(b);
        let named = constraints
            .iter()
            .filter_map(|c| text(c, "resource"))
            .any(|r| content_words(r).iter().any(|w| bw.contains(w)));
        if !constraints.is_empty() && !named {
            push(
                out,
                "/deliverable/bottleneck",
                "must name one of constraints[].resource, or be \"unknown\"",
            );
        }
    }
    if let Some(target) = d.get("growth_target") {
        sourced(
            cx,
            target,
            "/deliverable/growth_target",
            &["statement"],
            out,
        );
        let missing = text(target, "source") == Some("not_provided");
        if missing && verdict.is_some_and(|v| v != "insufficient_data") {
            push(
                out,
                "/deliverable/growth_target/source",
                "is not_provided, so the verdict must be insufficient_data: growth cannot be judged without a target",
            );
        }
    }
}

/// Words that make a sentence a statement about the law.
const LEGAL: [&str; 9] = [
    "law",
    "laws",
    "legal",
    "legally",
    "statute",
    "statutory",
    "regulation",
    "regulations",
    "regulatory",
];

pub fn sop(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let roles: Vec<&str> = items(d.get("roles"))
        .iter()
        .filter_map(|r| text(r, "role"))
        .collect();
    let known = |r: &str| roles.iter().any(|x| same(x, r));
    for (i, step) in items(d.get("steps")).iter().enumerate() {
        if int(step, "n").is_some_and(|n| n != i as i64 + 1) {
            push(
                out,
                format!("/deliverable/steps/{i}/n"),
                format!("must be {}: n runs 1, 2, 3… in order", i + 1),
            );
        }
        if text(step, "role").is_some_and(|r| !known(r)) {
            push(
                out,
                format!("/deliverable/steps/{i}/role"),
                "must be one of roles[].role",
            );
        }
        let first = text(step, "action").and_then(|a| words(a).into_iter().next());
        if let Some(w) = first.filter(|w| NOT_VERBS.contains(&w.as_str())) {
            push(
                out,
                format!("/deliverable/steps/{i}/action"),
                format!("must start with a verb (\"Inspect…\"), not \"{w}\""),
            );
        }
    }
    if text(d, "owner_role").is_some_and(|r| !known(r)) {
        push(
            out,
            "/deliverable/owner_role",
            "must be one of roles[].role",
        );
    }
    distinct(
        items(d.get("roles")),
        Some("role"),
        "/deliverable/roles",
        "role",
        out,
    );
    let mut all = Vec::new();
    strings(d, "/deliverable", &mut all);
    let legal = all.iter().find(|(_, s)| has_any(s, &LEGAL));
    let caveated = items(cx.envelope.get("caveats"))
        .iter()
        .filter_map(Value::as_str)
        .any(|c| {
            has_any(c, &["confirm", "check", "verify"])
                && has_any(
                    c,
                    &[
                        "local",
                        "state",
                        "law",
                        "laws",
                        "rule",
                        "rules",
                        "legal",
                        "statute",
                        "regulation",
                        "lawyer",
                        "attorney",
                    ],
                )
        });
    if let Some((path, _)) = legal
        && !caveated
    {
        push(
            out,
            path.clone(),
            "states a legal rule: add a caveat telling the caller to confirm the local rule",
        );
    }
}

/// First words that show an action is not an instruction.
const NOT_VERBS: [&str; 12] = [
    "the", "a", "an", "this", "that", "it", "they", "we", "i", "you", "he", "she",
];
