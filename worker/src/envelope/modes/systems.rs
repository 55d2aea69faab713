//! decide_stack and map_automation: which tools and automations to adopt, from the caller's
//! costs and times.

use super::shared::{Ctx, distinct, sourced};
use crate::envelope::prose;
use crate::envelope::text::{at, int, items, push, same, text};
use grove_common::schema::Violation;

fn unknown(s: &str) -> bool {
    s.trim().to_lowercase().starts_with("unknown")
}

pub fn stack(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let options = items(d.get("options"));
    let names: Vec<&str> = options.iter().filter_map(|o| text(o, "option")).collect();
    let class = text(d, "capability_class");
    if let Some(c) = at(d, "/decision/choice") {
        if !names.contains(&c) {
            push(
                out,
                "/deliverable/decision/choice",
                "must be one of options[].option",
            );
        }
        if class == Some("not_needed") && c != "delete" {
            push(
                out,
                "/deliverable/decision/choice",
                "must be delete when capability_class is not_needed",
            );
        }
        if c == "build" && class.is_some_and(|k| k != "core_differentiator") {
            push(
                out,
                "/deliverable/decision/choice",
                "may be build only when capability_class is core_differentiator",
            );
        }
    }
    if text(d, "status").is_some_and(|s| s != "proposed") {
        push(out, "/deliverable/status", "must be proposed");
    }
    distinct(
        options,
        Some("option"),
        "/deliverable/options",
        "option",
        out,
    );
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
            push(
                out,
                format!("{base}/rank"),
                format!(
                    "must be {}: ranks run 1..{k}, each once, listed in rank order",
                    i + 1
                ),
            );
        }
        if text(c, "logic") == Some("judgment")
            && let Some(a @ ("no_code" | "script_or_integration")) = text(c, "approach")
        {
            push(
                out,
                format!("{base}/approach"),
                format!("must not be {a} when logic is judgment"),
            );
        }
        sourced(cx, c, &base, &["time_per_run"], out);
        if let Some(saved) = text(c, "hours_saved").filter(|s| !unknown(s)) {
            if text(c, "time_per_run").is_some_and(unknown) {
                push(
                    out,
                    format!("{base}/hours_saved"),
                    "must be \"unknown\" while time_per_run is unknown",
                );
            } else {
                prose::check(&format!("{base}/hours_saved"), saved, cx.pool, false, out);
            }
        }
    }
    let first = candidates.iter().find(|c| int(c, "rank") == Some(1));
    if first.and_then(|c| text(c, "stability")) == Some("changing") {
        push(
            out,
            "/deliverable/candidates/0/stability",
            "is changing, so this task should not be rank 1: fix the process first",
        );
    }
    let first_task = first.and_then(|c| text(c, "task"));
    if let (Some(first), Some(pilot)) = (first_task, at(d, "/first_pilot/task"))
        && !same(first, pilot)
    {
        push(
            out,
            "/deliverable/first_pilot/task",
            "must be the rank-1 candidate's task",
        );
    }
    distinct(
        candidates,
        Some("task"),
        "/deliverable/candidates",
        "task",
        out,
    );
}
