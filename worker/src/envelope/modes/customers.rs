//! rescue_churn and plan_onboarding.

use super::shared::{Ctx, distinct, sourced};
use crate::envelope::figures;
use crate::envelope::prose;
use crate::envelope::text::{content_words, int, items, push, same, text};
use grove_common::schema::Violation;
use serde_json::Value;

pub fn churn(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let segments = items(d.get("churn_segments"));
    let mut total = 0.0;
    for (i, s) in segments.iter().enumerate() {
        let base = format!("/deliverable/churn_segments/{i}");
        let (reason, class) = (text(s, "reason"), text(s, "class"));
        let required = match reason {
            Some("payment_failure") => Some("preventable"),
            Some("business_closed" | "need_ended") => Some("accept"),
            _ => None,
        };
        if let Some(required) = required
            && class.is_some_and(|c| c != required)
        {
            let reason = reason.unwrap_or_default();
            push(
                out,
                format!("{base}/class"),
                format!("must be {required} when reason is {reason}"),
            );
        }
        sourced(cx, s, &base, &["share"], out);
        if let Some(share) = text(s, "share").and_then(|t| figures::extract(t).into_iter().next())
            && share.percent
        {
            total += share.value;
        }
        if let Some(at_stake) = text(s, "monthly_revenue_at_stake")
            && !at_stake.trim().to_lowercase().starts_with("unknown")
        {
            prose::check(
                &format!("{base}/monthly_revenue_at_stake"),
                at_stake,
                cx.pool,
                false,
                out,
            );
        }
    }
    if total > 101.0 {
        push(
            out,
            "/deliverable/churn_segments",
            format!("shares add up to {total}%: segments are separate parts of churn"),
        );
    }
    distinct(
        segments,
        Some("segment"),
        "/deliverable/churn_segments",
        "segment",
        out,
    );
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

pub fn onboarding(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
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
    let target = d.pointer("/first_value/target_day").and_then(Value::as_i64);
    if let Some(day) = target.filter(|d| !(1..=14).contains(d)) {
        push(
            out,
            "/deliverable/first_value/target_day",
            format!("must be from 1 to 14, is {day}"),
        );
    }
    // One milestone on or before the target day is the first-value event itself.
    let event = d
        .pointer("/first_value/event")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let event_words = content_words(event);
    let milestones = items(d.get("milestones"));
    if let Some(target) = target
        && !event_words.is_empty()
        && !milestones.is_empty()
        && !milestones.iter().any(|m| {
            int(m, "day").is_some_and(|day| day <= target)
                && text(m, "milestone")
                    .is_some_and(|t| content_words(t).iter().any(|w| event_words.contains(w)))
        })
    {
        push(
            out,
            "/deliverable/first_value/target_day",
            "needs a milestone on or before this day that is the first-value event itself",
        );
    }
    distinct(
        milestones,
        Some("milestone"),
        "/deliverable/milestones",
        "milestone",
        out,
    );
}
