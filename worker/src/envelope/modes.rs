//! Per-mode cross-field rules: spec 2.6 (objection scripts; the outbound rules live in
//! `outbound.rs`) and CONTRACT 8.

use super::check::{items, same};
use super::outbound;
use grove_common::{catalog::ModeId, schema::Violation};
use serde_json::Value;

/// Violations of `mode`'s own rules in `envelope`. Every mode has an arm, so a new mode cannot
/// skip this check unnoticed.
pub fn check(mode: ModeId, envelope: &Value) -> Vec<Violation> {
    let d = envelope.get("deliverable").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    match mode {
        ModeId::WriteOutboundSequence => outbound::check(d, &mut out),
        ModeId::HandleObjections => objections(d, &mut out),
        ModeId::PositionAgainstAlternatives => position(d, &mut out),
        ModeId::PlanCapacity => capacity(envelope, &mut out),
        ModeId::DraftSop => sop(d, &mut out),
        ModeId::RescueChurn => churn(d, &mut out),
        ModeId::PlanOnboarding => onboarding(d, &mut out),
        ModeId::DecideStack => stack(d, &mut out),
        ModeId::MapAutomation => automation(d, &mut out),
        ModeId::MapAccountability => accountability(d, &mut out),
        // No cross-field rules yet beyond the published schema and the shared envelope checks:
        // the same behaviour as before these arms were spelled out. Their rules come later.
        ModeId::DiagnoseGrowth
        | ModeId::DesignOffer
        | ModeId::RewritePricing
        | ModeId::FunnelReview
        | ModeId::AuditFunction
        | ModeId::ScopeRole => {}
    }
    out
}

pub(super) fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(super) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

pub(super) fn push(out: &mut Vec<Violation>, path: String, message: impl Into<String>) {
    out.push(Violation::new(path, message));
}

fn objections(d: &Value, out: &mut Vec<Violation>) {
    for (i, o) in items(d.get("objections")).iter().enumerate() {
        let words = text(o, "response_script").map_or(0, |s| s.split_whitespace().count());
        if words >= 60 {
            push(
                out,
                format!("/deliverable/objections/{i}/response_script"),
                format!("must be under 60 words, has {words}"),
            );
        }
    }
}

fn position(d: &Value, out: &mut Vec<Violation>) {
    let names: Vec<&str> = items(d.get("alternatives"))
        .iter()
        .filter_map(|a| text(a, "name"))
        .collect();
    if let Some(against) = d.pointer("/wedge/against").and_then(Value::as_str)
        && !names.iter().any(|n| same(n, against))
    {
        push(
            out,
            "/deliverable/wedge/against".into(),
            "must be one of alternatives[].name",
        );
    }
}

fn capacity(envelope: &Value, out: &mut Vec<Violation>) {
    let verdict = envelope
        .pointer("/deliverable/verdict")
        .and_then(Value::as_str);
    let confidence = envelope
        .pointer("/thinking/confidence")
        .and_then(Value::as_str);
    if verdict == Some("insufficient_data") && confidence.is_some_and(|c| c != "low") {
        push(
            out,
            "/thinking/confidence".into(),
            "must be low when verdict is insufficient_data",
        );
    }
}

fn sop(d: &Value, out: &mut Vec<Violation>) {
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
    }
    if text(d, "owner_role").is_some_and(|r| !known(r)) {
        push(
            out,
            "/deliverable/owner_role".into(),
            "must be one of roles[].role",
        );
    }
}

fn churn(d: &Value, out: &mut Vec<Violation>) {
    let segments = items(d.get("churn_segments"));
    for (i, s) in segments.iter().enumerate() {
        let (reason, class) = (text(s, "reason"), text(s, "class"));
        let required = match reason {
            Some("payment_failure") => "preventable",
            Some("business_closed" | "need_ended") => "accept",
            _ => continue,
        };
        if class.is_some_and(|c| c != required) {
            let reason = reason.unwrap_or_default();
            push(
                out,
                format!("/deliverable/churn_segments/{i}/class"),
                format!("must be {required} when reason is {reason}"),
            );
        }
    }
    for (j, play) in items(d.get("save_plays")).iter().enumerate() {
        let Some(name) = text(play, "segment") else {
            continue;
        };
        let found = segments
            .iter()
            .find(|s| text(s, "segment").is_some_and(|n| same(n, name)));
        let at = format!("/deliverable/save_plays/{j}/segment");
        match found.map(|s| text(s, "class")) {
            None => push(out, at, "must be one of churn_segments[].segment"),
            Some(Some("preventable")) => {}
            Some(_) => push(
                out,
                at,
                "must name a preventable segment, not one to accept",
            ),
        }
    }
}

fn onboarding(d: &Value, out: &mut Vec<Violation>) {
    for list in ["milestones", "touchpoints"] {
        let mut prev: Option<i64> = None;
        for (i, item) in items(d.get(list)).iter().enumerate() {
            let Some(day) = int(item, "day") else {
                continue;
            };
            if let Some(p) = prev.filter(|p| day < *p) {
                push(
                    out,
                    format!("/deliverable/{list}/{i}/day"),
                    format!("must not be before the previous day {p}: days never decrease"),
                );
            }
            prev = Some(day);
        }
    }
    if let Some(day) = d.pointer("/first_value/target_day").and_then(Value::as_i64)
        && !(1..=14).contains(&day)
    {
        push(
            out,
            "/deliverable/first_value/target_day".into(),
            "must be from 1 to 14",
        );
    }
}

fn stack(d: &Value, out: &mut Vec<Violation>) {
    let options: Vec<&str> = items(d.get("options"))
        .iter()
        .filter_map(|o| text(o, "option"))
        .collect();
    let choice = d.pointer("/decision/choice").and_then(Value::as_str);
    if let Some(c) = choice {
        if !options.contains(&c) {
            push(
                out,
                "/deliverable/decision/choice".into(),
                "must be one of options[].option",
            );
        }
        if text(d, "capability_class") == Some("not_needed") && c != "delete" {
            push(
                out,
                "/deliverable/decision/choice".into(),
                "must be delete when capability_class is not_needed",
            );
        }
    }
    if text(d, "status").is_some_and(|s| s != "proposed") {
        push(out, "/deliverable/status".into(), "must be proposed");
    }
}

fn automation(d: &Value, out: &mut Vec<Violation>) {
    let candidates = items(d.get("candidates"));
    let k = candidates.len() as i64;
    let mut seen: Vec<i64> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let at = |f: &str| format!("/deliverable/candidates/{i}/{f}");
        if let Some(rank) = int(c, "rank") {
            if !(1..=k).contains(&rank) {
                push(
                    out,
                    at("rank"),
                    format!("must be from 1 to {k}: ranks run 1..k"),
                );
            } else if seen.contains(&rank) {
                push(
                    out,
                    at("rank"),
                    format!("repeats rank {rank}: ranks are unique"),
                );
            }
            seen.push(rank);
        }
        let approach = text(c, "approach");
        if text(c, "logic") == Some("judgment")
            && let Some(a @ ("no_code" | "script_or_integration")) = approach
        {
            push(
                out,
                at("approach"),
                format!("must not be {a} when logic is judgment"),
            );
        }
    }
    let first = candidates
        .iter()
        .find(|c| int(c, "rank") == Some(1))
        .and_then(|c| text(c, "task"));
    let pilot = d.pointer("/first_pilot/task").and_then(Value::as_str);
    if let (Some(first), Some(pilot)) = (first, pilot)
        && !same(first, pilot)
    {
        push(
            out,
            "/deliverable/first_pilot/task".into(),
            "must be the rank-1 candidate's task",
        );
    }
}

fn accountability(d: &Value, out: &mut Vec<Violation>) {
    for (i, o) in items(d.get("outcomes")).iter().enumerate() {
        let Some(owner) = text(o, "owner") else {
            continue;
        };
        let lower = format!(" {} ", owner.to_lowercase());
        if lower.contains(" and ") || owner.contains('/') || owner.contains('&') {
            push(
                out,
                format!("/deliverable/outcomes/{i}/owner"),
                "must be one owner: no \"and\", \"/\" or \"&\"",
            );
        }
    }
}
