//! design_offer: an offer with a promise in a time frame, at a real price, and a guarantee the
//! caller is told to check.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::{has_any, same};
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::Deserialize;

pub const MODE: Mode = Mode {
    id: ModeId::DesignOffer,
    tier: Tier::Deep,
    summary: "Designs an offer: promise, price point, guarantee, inclusions and bonuses.",
    purpose: "designs an offer",
    recommended_context: &[
        "company.what_they_sell",
        "audience.icp",
        "audience.pain",
        "offer.price_usd",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DesignOffer {
    #[schemars(length(max = 80))]
    pub offer_name: String,
    /// Outcome with a time frame.
    #[schemars(length(max = 200))]
    pub promise: String,
    #[schemars(range(min = 0))]
    pub price_point_usd: f64,
    #[schemars(length(max = 300))]
    pub price_rationale: String,
    #[schemars(length(max = 300))]
    pub guarantee: String,
    #[schemars(length(min = 1, max = 7), inner(length(max = 120)))]
    pub inclusions: Vec<String>,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub bonuses: Vec<String>,
    #[schemars(length(max = 300))]
    pub why_it_converts: String,
}

/// Time words that make a promise's time frame.
const TIME_WORDS: [&str; 12] = [
    "day", "days", "week", "weeks", "month", "months", "year", "years", "quarter", "hour", "hours",
    "by",
];

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

impl Deliverable for DesignOffer {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: offer_name),
                pattern!(Self: promise),
                pattern!(Self: guarantee),
                pattern!(Self: inclusions[_]),
                pattern!(Self: bonuses[_]),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        if self.price_point_usd <= 0.0 {
            push(
                out,
                at!(self.price_point_usd),
                "must be above 0: it is the price you recommend",
            );
        }
        if !has_any(&self.promise, &TIME_WORDS) {
            push(
                out,
                at!(self.promise),
                "must state a time frame (\"in 8 weeks\", \"within 30 days\")",
            );
        }
        self.guarantee_caveat(cx, out);
        distinct(
            self.inclusions.iter().map(String::as_str),
            |i| at!(self.inclusions[i]),
            "inclusion",
            out,
        );
        distinct(
            self.bonuses.iter().map(String::as_str),
            |i| at!(self.bonuses[i]),
            "bonus",
            out,
        );
    }
}

impl DesignOffer {
    /// "Never suggest guarantees the caller may not be allowed to give without a caveat saying
    /// to check" (prompt: design_offer). Whether a given guarantee is allowed depends on the
    /// caller's trade, country and insurer, which the checker cannot know, so every suggested
    /// guarantee needs the caveat. Exempt: no guarantee ("" or "No guarantee ..."), and the
    /// caller's own guarantee (`context.offer.guarantee`) restated, which the coach is not
    /// suggesting.
    fn guarantee_caveat(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let g = self.guarantee.trim().to_lowercase();
        let none = g.is_empty() || g.starts_with("no guarantee") || g.starts_with("none");
        let callers = cx
            .request
            .context
            .as_ref()
            .and_then(|c| c.offer.as_ref())
            .and_then(|o| o.guarantee.as_deref())
            .is_some_and(|c| same(c, &self.guarantee));
        if none || callers || cx.caveat_says(&CHECK_WORDS, &GUARANTEE_TOPICS) {
            return;
        }
        push(
            out,
            at!(self.guarantee),
            "suggests a guarantee: add a caveat telling the caller to check they may give it \
             (their insurer, professional body or local consumer law)",
        );
    }
}
