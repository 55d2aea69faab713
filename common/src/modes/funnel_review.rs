//! funnel_review: rates that trace, a biggest leak that is one of the stages, and no traffic
//! before the leak is fixed.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::{content_words, has_any};
use super::{Ctx, Deliverable, Kinds, Thinking};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::Deserialize;

pub const MODE: Mode = Mode {
    id: ModeId::FunnelReview,
    tier: Tier::Deep,
    summary: "Walks the funnel stage by stage and finds the biggest leak.",
    purpose: "walks the funnel and finds the biggest leak",
    recommended_context: &[
        "metrics.traffic_per_month",
        "metrics.leads_per_month",
        "metrics.close_rate_pct",
        "company.website",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FunnelReview {
    #[schemars(length(min = 1, max = 6))]
    pub stages: Vec<Stage>,
    /// Names the stage losing the most, and why.
    #[schemars(length(max = 240))]
    pub biggest_leak: String,
    #[schemars(length(max = 240))]
    pub quick_win: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Stage {
    #[schemars(length(max = 80))]
    pub stage: String,
    /// Estimated conversion of this stage in percent; null when unknown.
    pub estimated_conversion_pct: Option<f64>,
    #[schemars(length(max = 240))]
    pub leak: String,
    #[schemars(length(max = 240))]
    pub fix: String,
}

/// Moves that buy more traffic, which must wait while a later stage leaks most.
const MORE_TRAFFIC: [&str; 8] = [
    "more traffic",
    "more leads",
    "more visitors",
    "ad spend",
    "more ads",
    "buy ads",
    "increase traffic",
    "drive traffic",
];

impl Deliverable for FunnelReview {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![pattern!(Self: stages[_].fix), pattern!(Self: quick_win)],
            facts: vec![pattern!(Self: stages[_].leak), pattern!(Self: biggest_leak)],
            traced_numbers: vec![pattern!(Self: stages[_].estimated_conversion_pct)],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let stages = &self.stages;
        for (i, s) in stages.iter().enumerate() {
            if let Some(pct) = s.estimated_conversion_pct
                && !cx.tracing.shows_rate(pct)
            {
                push(
                    out,
                    at!(self.stages[i].estimated_conversion_pct),
                    "must follow from the caller's figures (show it in `numbers`) or be null",
                );
            }
        }
        distinct(
            stages.iter().map(|s| s.stage.as_str()),
            |i| at!(self.stages[i].stage),
            "stage",
            out,
        );
        // The biggest leak names one of the stages: by its name or by a word only that stage has.
        let leak = self.biggest_leak.as_str();
        let names: Vec<&str> = stages.iter().map(|s| s.stage.as_str()).collect();
        let hit = names.iter().position(|n| leak_names(leak, n, &names));
        if !leak.is_empty() && !names.is_empty() && hit.is_none() {
            push(
                out,
                at!(self.biggest_leak),
                "must name one of stages[].stage",
            );
        }
        let lever = cx.thinking.lever.unwrap_or_default();
        if hit.is_some_and(|i| i > 0) && has_any(lever, &MORE_TRAFFIC) {
            push(
                out,
                Thinking::LEVER,
                "must fix the biggest leak before buying more traffic",
            );
        }
    }
}

fn leak_names(leak: &str, stage: &str, all: &[&str]) -> bool {
    let leak_words = content_words(leak);
    if content_words(stage).iter().all(|w| leak_words.contains(w)) {
        return true;
    }
    // A word of this stage that no other stage uses ("held", "show") identifies it.
    let others: Vec<String> = all
        .iter()
        .filter(|s| **s != stage)
        .flat_map(|s| content_words(s))
        .collect();
    content_words(stage)
        .iter()
        .any(|w| !others.contains(w) && leak_words.contains(w))
}
