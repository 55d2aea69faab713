//! diagnose_growth, design_offer, rewrite_pricing and funnel_review.

use super::shared::{Ctx, distinct};
use crate::envelope::text::{at, has_any, items, push, same, text};
use grove_common::schema::Violation;
use serde_json::Value;

/// Words that name each discipline of `binding_constraint` in a diagnosis. A diagnosis must use
/// at least one word of its constraint (it may mention others in passing).
pub const CONSTRAINT_WORDS: [(&str, &[&str]); 5] = [
    (
        "demand",
        &[
            "demand",
            "lead",
            "leads",
            "enquiries",
            "inquiries",
            "traffic",
            "awareness",
            "pipeline",
            "visitors",
            "prospects",
            "reach",
        ],
    ),
    (
        "conversion",
        &[
            "conversion",
            "convert",
            "converts",
            "close",
            "closes",
            "closing",
            "win",
            "wins",
            "won",
            "book",
            "books",
            "booking",
            "bookings",
            "proposals",
            "buy",
            "sign",
            "enrol",
            "enrols",
            "enroll",
            "enrolls",
            "enrolment",
            "enrollment",
        ],
    ),
    (
        "retention",
        &[
            "retention",
            "retain",
            "churn",
            "leave",
            "leaves",
            "leaving",
            "cancel",
            "cancels",
            "cancellations",
            "lose",
            "losing",
            "lost",
            "stay",
            "renew",
            "renewal",
        ],
    ),
    (
        "pricing",
        &[
            "price",
            "prices",
            "pricing",
            "priced",
            "margin",
            "margins",
            "charge",
            "charges",
            "charging",
            "fee",
            "fees",
            "discount",
            "discounts",
            "underpriced",
        ],
    ),
    (
        "delivery",
        &[
            "delivery",
            "deliver",
            "capacity",
            "fulfil",
            "fulfill",
            "fulfilment",
            "bandwidth",
            "backlog",
            "hours",
            "overloaded",
            "throughput",
            "crews",
            "staff",
            "team",
        ],
    ),
];

pub fn diagnose(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let constraint = text(d, "binding_constraint");
    let diagnosis = at(cx.envelope, "/thinking/diagnosis");
    if let (Some(c), Some(diagnosis)) = (constraint, diagnosis)
        && let Some((_, words)) = CONSTRAINT_WORDS.iter().find(|(k, _)| *k == c)
        && !has_any(diagnosis, words)
    {
        push(
            out,
            "/thinking/diagnosis",
            format!(
                "must name the same constraint as binding_constraint ({c}), e.g. with one of: {}",
                words[..4].join(", ")
            ),
        );
    }
    let first = at(d, "/ranked_levers/0/lever");
    if let (Some(first), Some(lever)) = (first, at(cx.envelope, "/thinking/lever"))
        && !same(first, lever)
    {
        push(
            out,
            "/deliverable/ranked_levers/0/lever",
            "must equal thinking.lever",
        );
    }
    let levers = items(d.get("ranked_levers"));
    distinct(
        levers,
        Some("lever"),
        "/deliverable/ranked_levers",
        "lever",
        out,
    );
    distinct(
        items(d.get("do_not_do")),
        None,
        "/deliverable/do_not_do",
        "item",
        out,
    );
}

/// Time words that make a promise's time frame.
const TIME_WORDS: [&str; 12] = [
    "day", "days", "week", "weeks", "month", "months", "year", "years", "quarter", "hour", "hours",
    "by",
];

pub fn offer(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    if d.get("price_point_usd")
        .and_then(Value::as_f64)
        .is_some_and(|p| p <= 0.0)
    {
        push(
            out,
            "/deliverable/price_point_usd",
            "must be above 0: it is the price you recommend",
        );
    }
    if text(d, "promise").is_some_and(|p| !has_any(p, &TIME_WORDS)) {
        push(
            out,
            "/deliverable/promise",
            "must state a time frame (\"in 8 weeks\", \"within 30 days\")",
        );
    }
    distinct(
        items(d.get("inclusions")),
        None,
        "/deliverable/inclusions",
        "inclusion",
        out,
    );
    distinct(
        items(d.get("bonuses")),
        None,
        "/deliverable/bonuses",
        "bonus",
        out,
    );
}

/// Tier names that are metals or gems: allowed only when the caller uses them.
const METALS_AND_GEMS: [&str; 12] = [
    "bronze", "silver", "gold", "platinum", "diamond", "titanium", "copper", "ruby", "emerald",
    "sapphire", "pearl", "crystal",
];

pub fn pricing(cx: &Ctx, out: &mut Vec<Violation>) {
    let tiers = items(cx.d.get("recommended_tiers"));
    let mut prev: Option<f64> = None;
    for (i, tier) in tiers.iter().enumerate() {
        if let Some(p) = tier.get("price_usd").and_then(Value::as_f64) {
            if let Some(q) = prev.filter(|q| p < *q) {
                push(
                    out,
                    format!("/deliverable/recommended_tiers/{i}/price_usd"),
                    format!("must not be below the previous tier's {q}: tiers run cheapest first"),
                );
            }
            prev = Some(p);
        }
        if let Some(name) = text(tier, "name") {
            for m in METALS_AND_GEMS {
                if has_any(name, &[m]) && !has_any(cx.caller_text, &[m]) {
                    push(
                        out,
                        format!("/deliverable/recommended_tiers/{i}/name"),
                        format!(
                            "must describe the buyer or the outcome, not a metal or gem (\"{m}\")"
                        ),
                    );
                }
            }
        }
    }
    distinct(
        tiers,
        Some("name"),
        "/deliverable/recommended_tiers",
        "tier name",
        out,
    );
}
