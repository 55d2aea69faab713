//! What one clause of a caller's message states: a metric (its figure, kind and words
//! together) or a plain description of the business, its buyers, their pain or its promise.

use crate::envelope::figures::{self, Span};
use crate::envelope::text::{has_any, phrase_at, words};

const MONTHLY: [&str; 6] = [
    "a month",
    "per month",
    "monthly",
    "each month",
    "every month",
    "month",
];

const REVENUE: [&str; 11] = [
    "revenue",
    "make",
    "making",
    "made",
    "bring in",
    "brings in",
    "earn",
    "earning",
    "turnover",
    "gross",
    "sales",
];

const CLOSE: [&str; 8] = [
    "close",
    "closes",
    "closing",
    "close rate",
    "win rate",
    "convert",
    "conversion",
    "win",
];

const CHURN: [&str; 7] = [
    "churn",
    "lose",
    "losing",
    "cancel",
    "cancels",
    "cancellations",
    "attrition",
];

const AVERAGE_ORDER: [&str; 12] = [
    "average order",
    "average sale",
    "average deal",
    "average booking",
    "average project",
    "average job",
    "average ticket",
    "average invoice",
    "aov",
    "projects average",
    "jobs average",
    "orders average",
];

const PRICE: [&str; 7] = [
    "charge",
    "charges",
    "we charge",
    "priced at",
    "price is",
    "costs",
    "sells for",
];

/// The metric fields one clause states.
pub(super) fn metric_fields(clause: &str) -> Vec<&'static str> {
    let spans = figures::spans(clause);
    let monthly = has_any(clause, &MONTHLY) || clause.contains("/month") || clause.contains("/mo");
    let money = spans.iter().any(|s| s.figure.currency);
    let rate = spans.iter().any(|s| s.figure.percent);
    let mut out = Vec::new();
    if money && monthly && has_any(clause, &REVENUE) {
        out.push("metrics.monthly_revenue_usd");
    }
    if monthly
        && counted(
            clause,
            &spans,
            &["leads", "inquiries", "enquiries", "demo requests"],
        )
    {
        out.push("metrics.leads_per_month");
    }
    if monthly
        && counted(
            clause,
            &spans,
            &["visits", "visitors", "sessions", "pageviews"],
        )
        && has_any(clause, &["site", "website", "visits", "visitors"])
    {
        out.push("metrics.traffic_per_month");
    }
    if rate && has_any(clause, &CHURN) {
        if monthly {
            out.push("metrics.monthly_churn_pct");
        }
    } else if rate && has_any(clause, &CLOSE) {
        out.push("metrics.close_rate_pct");
    }
    if money && has_any(clause, &AVERAGE_ORDER) {
        out.push("metrics.average_order_value_usd");
    }
    if money && !has_any(clause, &REVENUE) && has_any(clause, &PRICE) {
        out.push("offer.price_usd");
    }
    out
}

/// A plain count directly followed by one of `nouns` ("30 leads", "6,000 visits").
fn counted(clause: &str, spans: &[Span], nouns: &[&str]) -> bool {
    let chars: Vec<char> = clause.chars().collect();
    spans.iter().filter(|s| s.figure.is_plain()).any(|s| {
        let after: String = chars[s.chars.end..].iter().collect();
        let next = words(&after);
        // The noun comes next, or after one modifier ("6,000 site visits").
        nouns.iter().any(|n| {
            let nw = words(n);
            (0..=1)
                .any(|skip| next.len() >= skip + nw.len() && next[skip..skip + nw.len()] == nw[..])
        })
    })
}

/// Openings that say what the business sells, who buys, their pain and the promise.
pub(super) fn descriptive_fields(clause: &str) -> Vec<&'static str> {
    let w = words(clause);
    let starts = |phrases: &[&str]| {
        phrases
            .iter()
            .any(|p| phrase_at(&w, p).is_some_and(|at| w.len() >= at.end + 2))
    };
    let mut out = Vec::new();
    let sells = starts(&[
        "we sell",
        "i sell",
        "we offer",
        "we provide",
        "we run a",
        "i run a",
        "we are a",
        "we're a",
        "we own a",
        "i own a",
    ]);
    if sells && figures::extract(clause).is_empty() {
        out.push("company.what_they_sell");
    }
    if starts(&[
        "our ideal customer",
        "our ideal client",
        "our ideal customers",
        "our customers are",
        "our clients are",
        "we sell to",
        "we serve",
        "our buyers are",
    ]) {
        out.push("audience.icp");
    }
    if starts(&[
        "their biggest problem",
        "their main problem",
        "their pain",
        "they struggle with",
        "their problem is",
    ]) {
        out.push("audience.pain");
    }
    if starts(&[
        "we promise",
        "we guarantee",
        "our promise is",
        "our promise",
    ]) {
        out.push("offer.promise");
    }
    if starts(&["we are pre", "we're pre", "still pre"])
        || clause.to_lowercase().contains("pre-revenue")
    {
        out.push("company.stage");
    }
    if has_any(clause, &["industry"])
        && starts(&["we are in the", "we're in the", "our industry is"])
    {
        out.push("company.industry");
    }
    out
}
