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
    guarantee_caveat(cx, out);
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

/// A caveat that tells the caller to check a guarantee holds one of these verbs ...
const CHECK_WORDS: [&str; 6] = ["check", "confirm", "verify", "ask", "make sure", "consult"];
/// ... and names the guarantee or who may forbid it.
const GUARANTEE_TOPICS: [&str; 19] = [
    "guarantee",
    "guarantees",
    "guaranteed",
    "refund",
    "refunds",
    "allowed",
    "permitted",
    "law",
    "laws",
    "legal",
    "lawyer",
    "attorney",
    "insurer",
    "insurers",
    "insurance",
    "regulator",
    "regulators",
    "regulations",
    "professional body",
];

/// "Never suggest guarantees the caller may not be allowed to give without a caveat saying to
/// check" (prompt: design_offer). Whether a given guarantee is allowed depends on the caller's
/// trade, country and insurer, which the checker cannot know, so every suggested guarantee needs
/// the caveat. Exempt: no guarantee ("" or "No guarantee ..."), and the caller's own guarantee
/// (`context.offer.guarantee`) restated, which the coach is not suggesting.
fn guarantee_caveat(cx: &Ctx, out: &mut Vec<Violation>) {
    let Some(guarantee) = text(cx.d, "guarantee") else {
        return;
    };
    let g = guarantee.trim().to_lowercase();
    let none = g.is_empty() || g.starts_with("no guarantee") || g.starts_with("none");
    let callers = cx
        .request
        .context
        .as_ref()
        .and_then(|c| c.offer.as_ref())
        .and_then(|o| o.guarantee.as_deref())
        .is_some_and(|c| same(c, guarantee));
    if none || callers {
        return;
    }
    let caveated = items(cx.envelope.get("caveats"))
        .iter()
        .filter_map(Value::as_str)
        .any(|c| has_any(c, &CHECK_WORDS) && has_any(c, &GUARANTEE_TOPICS));
    if !caveated {
        push(
            out,
            "/deliverable/guarantee",
            "suggests a guarantee: add a caveat telling the caller to check they may give it \
             (their insurer, professional body or local consumer law)",
        );
    }
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
