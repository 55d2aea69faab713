//! diagnose_growth: the one binding constraint, and the levers that move it, ranked.

use super::path::{at, pattern};
use super::rules::{distinct, name, push};
use super::words::{has_any, same};
use super::{Ctx, Deliverable, Kinds, Thinking};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::catalog::mode::LEVER_MAX;
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::DiagnoseGrowth,
    tier: Tier::Short,
    summary: "Finds the one binding growth constraint and ranks the levers that move it.",
    purpose: "finds the one binding growth constraint and ranks levers",
    recommended_context: &[
        "company.what_they_sell",
        "metrics.monthly_revenue_usd",
        "metrics.leads_per_month",
        "metrics.close_rate_pct",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiagnoseGrowth {
    /// The one discipline that binds growth.
    pub binding_constraint: Constraint,
    #[schemars(length(max = 4), inner(length(max = 200)))]
    pub evidence: Vec<String>,
    /// Ranked; the first item is the recommendation.
    #[schemars(length(min = 1, max = 3))]
    pub ranked_levers: Vec<Lever>,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub do_not_do: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    Demand,
    Conversion,
    Retention,
    Pricing,
    Delivery,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Lever {
    #[schemars(length(max = LEVER_MAX))]
    pub lever: String,
    #[schemars(length(max = 240))]
    pub why: String,
    pub expected_impact: Impact,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Impact {
    Small,
    Moderate,
    Large,
}

impl Constraint {
    /// Words that name this discipline in a diagnosis. A diagnosis must use at least one word of
    /// its constraint (it may mention others in passing).
    pub const fn words(self) -> &'static [&'static str] {
        match self {
            Constraint::Demand => &[
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
            Constraint::Conversion => &[
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
            Constraint::Retention => &[
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
            Constraint::Pricing => &[
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
            Constraint::Delivery => &[
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
        }
    }
}

impl Deliverable for DiagnoseGrowth {
    fn kinds() -> Kinds {
        Kinds {
            facts: vec![pattern!(Self: evidence[_])],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let words = self.binding_constraint.words();
        if let Some(diagnosis) = cx.thinking.diagnosis
            && !has_any(diagnosis, words)
        {
            push(
                out,
                Thinking::DIAGNOSIS,
                format!(
                    "must name the same constraint as binding_constraint ({}), e.g. with one of: {}",
                    name(self.binding_constraint),
                    words[..4].join(", ")
                ),
            );
        }
        if let (Some(first), Some(lever)) = (self.ranked_levers.first(), cx.thinking.lever)
            && !same(&first.lever, lever)
        {
            push(
                out,
                at!(self.ranked_levers[0].lever),
                "must equal thinking.lever",
            );
        }
        distinct(
            self.ranked_levers.iter().map(|l| l.lever.as_str()),
            |i| at!(self.ranked_levers[i].lever),
            "lever",
            out,
        );
        distinct(
            self.do_not_do.iter().map(String::as_str),
            |i| at!(self.do_not_do[i]),
            "item",
            out,
        );
    }
}
