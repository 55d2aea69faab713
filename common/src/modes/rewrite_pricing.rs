//! rewrite_pricing: tiers that run cheapest first, named for their buyers.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::has_any;
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::Deserialize;

pub const MODE: Mode = Mode {
    id: ModeId::RewritePricing,
    tier: Tier::Deep,
    summary: "Produces tiered pricing with a migration note for current customers.",
    purpose: "produces tiered pricing",
    recommended_context: &[
        "offer.price_usd",
        "offer.promise",
        "metrics.average_order_value_usd",
        "audience.icp",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RewritePricing {
    #[schemars(length(max = 300))]
    pub current_read: String,
    /// Cheapest first.
    #[schemars(length(min = 1, max = 4))]
    pub recommended_tiers: Vec<PriceTier>,
    #[schemars(length(max = 400))]
    pub migration_note: String,
    #[schemars(length(max = 300))]
    pub expected_effect: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PriceTier {
    #[schemars(length(max = 40))]
    pub name: String,
    #[schemars(range(min = 0))]
    pub price_usd: f64,
    #[schemars(length(max = 160))]
    pub for_whom: String,
    #[schemars(length(min = 1, max = 6), inner(length(max = 120)))]
    pub includes: Vec<String>,
}

/// Tier names that are metals or gems: allowed only when the caller uses them.
const METALS_AND_GEMS: [&str; 12] = [
    "bronze", "silver", "gold", "platinum", "diamond", "titanium", "copper", "ruby", "emerald",
    "sapphire", "pearl", "crystal",
];

impl Deliverable for RewritePricing {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: recommended_tiers[_].name),
                pattern!(Self: recommended_tiers[_].for_whom),
                pattern!(Self: recommended_tiers[_].includes[_]),
                pattern!(Self: migration_note),
            ],
            facts: vec![pattern!(Self: current_read), pattern!(Self: expected_effect)],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let tiers = &self.recommended_tiers;
        let mut prev: Option<f64> = None;
        for (i, tier) in tiers.iter().enumerate() {
            let p = tier.price_usd;
            if let Some(q) = prev.filter(|q| p < *q) {
                push(
                    out,
                    at!(self.recommended_tiers[i].price_usd),
                    format!("must not be below the previous tier's {q}: tiers run cheapest first"),
                );
            }
            prev = Some(p);
            for m in METALS_AND_GEMS {
                if has_any(&tier.name, &[m]) && !has_any(cx.caller_text, &[m]) {
                    push(
                        out,
                        at!(self.recommended_tiers[i].name),
                        format!(
                            "must describe the buyer or the outcome, not a metal or gem (\"{m}\")"
                        ),
                    );
                }
            }
        }
        distinct(
            tiers.iter().map(|t| t.name.as_str()),
            |i| at!(self.recommended_tiers[i].name),
            "tier name",
            out,
        );
    }
}
