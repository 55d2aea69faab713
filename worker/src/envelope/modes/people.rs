//! audit_function, scope_role and map_accountability.

use super::shared::{Ctx, distinct, sourced};
use crate::envelope::figures;
use crate::envelope::text::{content_words, items, push, text};
use grove_common::schema::Violation;
use serde_json::Value;

/// The score band each audit status stands for (inclusive): a critical finding scores low, a
/// strong one high (prompt: audit_function). Quartiles of the 0–100 scale.
pub const STATUS_BANDS: [(&str, f64, f64); 4] = [
    ("critical", 0.0, 24.0),
    ("weak", 25.0, 49.0),
    ("adequate", 50.0, 74.0),
    ("strong", 75.0, 100.0),
];

/// The highest `overall_score` an audit with a critical finding may give is below this.
pub const CRITICAL_HOLDS_BELOW: f64 = 50.0;

pub fn audit(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let findings = items(d.get("findings"));
    for (i, f) in findings.iter().enumerate() {
        let (Some(score), Some(status)) =
            (f.get("score").and_then(Value::as_f64), text(f, "status"))
        else {
            continue;
        };
        let band = STATUS_BANDS
            .iter()
            .find(|(_, lo, hi)| score >= *lo && score < *hi + 1.0);
        if let Some((expected, _, _)) = band
            && *expected != status
        {
            push(
                out,
                format!("/deliverable/findings/{i}/status"),
                format!(
                    "must be {expected} for a score of {score} (critical 0–24, weak 25–49, \
                     adequate 50–74, strong 75–100)"
                ),
            );
        }
    }
    // "any `critical` finding holds `overall_score` below 50" (prompt: audit_function). The
    // status is the model's own label; a status that disagrees with its score is reported above.
    let critical = findings
        .iter()
        .position(|f| text(f, "status") == Some("critical"));
    if let (Some(i), Some(overall)) = (critical, d.get("overall_score").and_then(Value::as_f64))
        && overall >= CRITICAL_HOLDS_BELOW
    {
        push(
            out,
            "/deliverable/overall_score",
            format!(
                "must be below {CRITICAL_HOLDS_BELOW}: findings/{i} is critical, and a critical \
                 finding holds overall_score below {CRITICAL_HOLDS_BELOW}"
            ),
        );
    }
    if let Some(top) = text(d, "top_priority") {
        let words = content_words(top);
        let names_one = findings.iter().any(|f| {
            let about = format!(
                "{} {}",
                text(f, "area").unwrap_or(""),
                text(f, "fix").unwrap_or("")
            );
            content_words(&about).iter().any(|w| words.contains(w))
        });
        if !findings.is_empty() && !names_one {
            push(
                out,
                "/deliverable/top_priority",
                "must be one of the findings (name its area or fix)",
            );
        }
    }
    distinct(findings, Some("area"), "/deliverable/findings", "area", out);
    distinct(
        items(d.get("quick_wins")),
        None,
        "/deliverable/quick_wins",
        "quick win",
        out,
    );
}

pub fn role(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let mix = items(d.get("work_mix"));
    for (i, w) in mix.iter().enumerate() {
        sourced(
            cx,
            w,
            &format!("/deliverable/work_mix/{i}"),
            &["share"],
            out,
        );
    }
    distinct(
        mix,
        Some("work"),
        "/deliverable/work_mix",
        "kind of work",
        out,
    );
    let by = |who: &'static str| {
        mix.iter()
            .filter(move |w| text(w, "best_done_by") == Some(who))
    };
    let shares: Option<Vec<f64>> = mix
        .iter()
        .map(|w| text(w, "share").and_then(|s| figures::extract(s).first().map(|f| f.value)))
        .collect();
    if let Some(shares) = &shares {
        let total: f64 = shares.iter().sum();
        if !mix.is_empty() && !(99.0..=101.0).contains(&total) {
            push(
                out,
                "/deliverable/work_mix",
                format!("shares must add up to 100%, add up to {total}%"),
            );
        }
    }
    let agent_share = match &shares {
        Some(s) => {
            mix.iter()
                .zip(s)
                .filter(|(w, _)| text(w, "best_done_by") == Some("ai_agent"))
                .map(|(_, v)| v)
                .sum::<f64>()
                / s.iter().sum::<f64>().max(1.0)
        }
        None => by("ai_agent").count() as f64 / mix.len().max(1) as f64,
    };
    let ruling = text(d, "ruling");
    let fault = match ruling {
        Some("agent" | "agent_with_owner_review") if agent_share <= 0.5 => {
            Some("an agent ruling needs most of work_mix to be best_done_by ai_agent")
        }
        Some("do_not_fill")
            if mix.iter().any(|w| {
                !matches!(text(w, "best_done_by"), Some("eliminate" | "existing_team"))
            }) =>
        {
            Some(
                "do_not_fill needs every kind of work to be eliminated or absorbed by the existing team",
            )
        }
        Some("hire_full_time" | "hire_part_time") if by("new_hire").next().is_none() => {
            Some("a hire needs work in work_mix best_done_by new_hire")
        }
        Some("contract") if by("contractor").next().is_none() => {
            Some("a contract needs work in work_mix best_done_by contractor")
        }
        _ => None,
    };
    if let Some(f) = fault {
        push(
            out,
            "/deliverable/ruling",
            format!("must follow the work mix: {f}"),
        );
    }
    let some_agent_work = by("ai_agent").next().is_some();
    agent_brief(d, ruling, some_agent_work, out);
}

/// The brief is filled for an agent ruling, may be filled when some of the work goes to an
/// agent, and is left empty ("" and []) otherwise.
fn agent_brief(d: &Value, ruling: Option<&str>, some_agent_work: bool, out: &mut Vec<Violation>) {
    let Some(brief) = d.get("agent_brief") else {
        return;
    };
    let filled = |k: &str| match brief.get(k) {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    let agent = matches!(ruling, Some("agent" | "agent_with_owner_review"));
    let path = |k: &str| format!("/deliverable/agent_brief/{k}");
    if agent {
        for k in ["goal", "tasks", "guardrails"] {
            if !filled(k) {
                push(out, path(k), "must be filled when the ruling is an agent");
            }
        }
        if ruling == Some("agent_with_owner_review") && !filled("human_review") {
            push(
                out,
                path("human_review"),
                "must say who reviews what when the ruling is agent_with_owner_review",
            );
        }
    } else if ruling.is_some() && !some_agent_work {
        for k in [
            "goal",
            "tasks",
            "tools_and_data",
            "guardrails",
            "human_review",
        ] {
            if filled(k) {
                push(
                    out,
                    path(k),
                    "must be empty (\"\" or []) when no work goes to an agent",
                );
            }
        }
    }
}
