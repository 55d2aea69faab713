//! plan_capacity, draft_sop, decide_stack and map_automation.

use super::{Ctx, distinct, sourced};
use crate::envelope::prose;
use crate::envelope::text::{at, content_words, has_any, int, items, push, same, strings, text, words};
use grove_common::schema::Violation;
use serde_json::Value;

fn unknown(s: &str) -> bool {
    s.trim().to_lowercase().starts_with("unknown")
}

pub fn capacity(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let verdict = text(d, "verdict");
    let constraints = items(d.get("constraints"));
    let statuses: Vec<&str> = constraints.iter().filter_map(|c| text(c, "status")).collect();
    if verdict == Some("insufficient_data") && at(cx.envelope, "/thinking/confidence").is_some_and(|c| c != "low") {
        push(out, "/thinking/confidence", "must be low when verdict is insufficient_data");
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
        Some("absorbs_with_changes") if !statuses.iter().any(|s| matches!(*s, "at_limit" | "over_limit")) => {
            Some("absorbs_with_changes needs a constraint at_limit or over_limit")
        }
        _ => None,
    };
    if let Some(need) = need {
        push(out, "/deliverable/verdict", format!("must agree with the constraints: {need}"));
    }
    for (i, c) in constraints.iter().enumerate() {
        let base = format!("/deliverable/constraints/{i}");
        sourced(cx, c, &base, &["capacity", "demand_at_target"], out);
        let blind = ["capacity", "demand_at_target"].iter().any(|k| text(c, k).is_some_and(unknown));
        if blind && text(c, "status").is_some_and(|s| s != "unknown") {
            push(out, format!("{base}/status"), "must be unknown while capacity or demand_at_target is unknown");
        }
    }
    distinct(constraints, Some("resource"), "/deliverable/constraints", "resource", out);
    distinct(items(d.get("levers")), Some("lever"), "/deliverable/levers", "lever", out);
    if let Some(b) = text(d, "bottleneck").filter(|b| !unknown(b)) {
        let bw = content_words(b);
        let named = constraints
            .iter()
            .filter_map(|c| text(c, "resource"))
            .any(|r| content_words(r).iter().any(|w| bw.contains(w)));
        if !constraints.is_empty() && !named {
            push(out, "/deliverable/bottleneck", "must name one of constraints[].resource, or be \"unknown\"");
        }
    }
    if let Some(target) = d.get("growth_target") {
        sourced(cx, target, "/deliverable/growth_target", &["statement"], out);
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
    "law", "laws", "legal", "legally", "statute", "statutory", "regulation", "regulations", "regulatory",
];

pub fn sop(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let roles: Vec<&str> = items(d.get("roles")).iter().filter_map(|r| text(r, "role")).collect();
    let known = |r: &str| roles.iter().any(|x| same(x, r));
    for (i, step) in items(d.get("steps")).iter().enumerate() {
        if int(step, "n").is_some_and(|n| n != i as i64 + 1) {
            push(out, format!("/deliverable/steps/{i}/n"), format!("must be {}: n runs 1, 2, 3… in order", i + 1));
        }
        if text(step, "role").is_some_and(|r| !known(r)) {
            push(out, format!("/deliverable/steps/{i}/role"), "must be one of roles[].role");
        }
        let first = text(step, "action").and_then(|a| words(a).into_iter().next());
        if let Some(w) = first.filter(|w| NOT_VERBS.contains(&w.as_str())) {
            push(out, format!("/deliverable/steps/{i}/action"), format!("must start with a verb (\"Inspect…\"), not \"{w}\""));
        }
    }
    if text(d, "owner_role").is_some_and(|r| !known(r)) {
        push(out, "/deliverable/owner_role", "must be one of roles[].role");
    }
    distinct(items(d.get("roles")), Some("role"), "/deliverable/roles", "role", out);
    let mut all = Vec::new();
    strings(d, "/deliverable", &mut all);
    let legal = all.iter().find(|(_, s)| has_any(s, &LEGAL));
    let caveated = items(cx.envelope.get("caveats"))
        .iter()
        .filter_map(Value::as_str)
        .any(|c| has_any(c, &["confirm", "check", "verify"]) && has_any(c, &["local", "state", "law", "laws", "rule", "rules", "legal", "statute", "regulation", "lawyer", "attorney"]));
    if let Some((path, _)) = legal
        && !caveated
    {
        push(out, path.clone(), "states a legal rule: add a caveat telling the caller to confirm the local rule");
    }
}

/// First words that show an action is not an instruction.
const NOT_VERBS: [&str; 12] = ["the", "a", "an", "this", "that", "it", "they", "we", "i", "you", "he", "she"];

pub fn stack(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let options = items(d.get("options"));
    let names: Vec<&str> = options.iter().filter_map(|o| text(o, "option")).collect();
    let class = text(d, "capability_class");
    if let Some(c) = at(d, "/decision/choice") {
        if !names.contains(&c) {
            push(out, "/deliverable/decision/choice", "must be one of options[].option");
        }
        if class == Some("not_needed") && c != "delete" {
            push(out, "/deliverable/decision/choice", "must be delete when capability_class is not_needed");
        }
        if c == "build" && class.is_some_and(|k| k != "core_differentiator") {
            push(out, "/deliverable/decision/choice", "may be build only when capability_class is core_differentiator");
        }
    }
    if text(d, "status").is_some_and(|s| s != "proposed") {
        push(out, "/deliverable/status", "must be proposed");
    }
    distinct(options, Some("option"), "/deliverable/options", "option", out);
    for (i, o) in options.iter().enumerate() {
        sourced(cx, o, &format!("/deliverable/options/{i}"), &["cost"], out);
    }
    if let Some(sc) = d.get("switching_cost") {
        sourced(cx, sc, "/deliverable/switching_cost", &["estimate"], out);
    }
}

pub fn automation(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let candidates = items(d.get("candidates"));
    let k = candidates.len() as i64;
    for (i, c) in candidates.iter().enumerate() {
        let base = format!("/deliverable/candidates/{i}");
        if let Some(rank) = int(c, "rank")
            && rank != i as i64 + 1
        {
            push(out, format!("{base}/rank"), format!("must be {}: ranks run 1..{k}, each once, listed in rank order", i + 1));
        }
        if text(c, "logic") == Some("judgment")
            && let Some(a @ ("no_code" | "script_or_integration")) = text(c, "approach")
        {
            push(out, format!("{base}/approach"), format!("must not be {a} when logic is judgment"));
        }
        sourced(cx, c, &base, &["time_per_run"], out);
        if let Some(saved) = text(c, "hours_saved").filter(|s| !unknown(s)) {
            if text(c, "time_per_run").is_some_and(unknown) {
                push(out, format!("{base}/hours_saved"), "must be \"unknown\" while time_per_run is unknown");
            } else {
                prose::check(&format!("{base}/hours_saved"), saved, cx.pool, false, out);
            }
        }
    }
    let first = candidates.iter().find(|c| int(c, "rank") == Some(1));
    if first.and_then(|c| text(c, "stability")) == Some("changing") {
        push(out, "/deliverable/candidates/0/stability", "is changing, so this task should not be rank 1: fix the process first");
    }
    let first_task = first.and_then(|c| text(c, "task"));
    if let (Some(first), Some(pilot)) = (first_task, at(d, "/first_pilot/task"))
        && !same(first, pilot)
    {
        push(out, "/deliverable/first_pilot/task", "must be the rank-1 candidate's task");
    }
    distinct(candidates, Some("task"), "/deliverable/candidates", "task", out);
}
