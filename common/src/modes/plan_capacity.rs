//! plan_capacity: a verdict that agrees with its constraints and its growth target, figures that
//! follow their source, and a bottleneck that is one of the constraints.

use super::path::{at, pattern};
use super::rules::{distinct, name, push, unknown};
use super::words::content_words;
use super::{Ctx, Deliverable, Kinds, Source, Thinking};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::PlanCapacity,
    tier: Tier::Flagship,
    summary: "Models whether delivery can absorb the planned growth, and what to change if not.",
    purpose: "models whether delivery can absorb growth",
    recommended_context: &[
        "company.what_they_sell",
        "metrics.monthly_revenue_usd",
        "metrics.average_order_value_usd",
        "company.stage",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanCapacity {
    /// insufficient_data requires thinking.confidence low.
    pub verdict: Verdict,
    pub planning_period: Period,
    #[schemars(length(min = 1, max = 4))]
    pub constraints: Vec<Constraint>,
    #[schemars(length(max = 160))]
    pub bottleneck: String,
    #[schemars(length(min = 1, max = 4))]
    pub levers: Vec<CapacityLever>,
    #[schemars(length(max = 200))]
    pub add_capacity_trigger: String,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub assumptions: Vec<String>,
    pub growth_target: GrowthTarget,
    /// When delivery runs out: the volume or date at which the bottleneck hits its limit, or
    /// "unknown".
    #[schemars(length(max = 200))]
    pub capacity_runs_out: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    AbsorbsGrowth,
    AbsorbsWithChanges,
    CannotAbsorb,
    InsufficientData,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Week,
    Month,
    Quarter,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Constraint {
    #[schemars(length(max = 80))]
    pub resource: String,
    #[schemars(length(max = 80))]
    pub capacity: String,
    #[schemars(length(max = 80))]
    pub demand_at_target: String,
    pub status: Load,
    pub source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    Headroom,
    AtLimit,
    OverLimit,
    Unknown,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CapacityLever {
    pub lever: LeverKind,
    #[schemars(length(max = 160))]
    pub effect: String,
    pub lead_time: LeadTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeverKind {
    Hire,
    Subcontract,
    Automate,
    Reprice,
    Productize,
    ThrottleSales,
    Reschedule,
    CutScope,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeadTime {
    Days,
    Weeks,
    Months,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrowthTarget {
    /// The growth the plan must absorb, with its figures, or "unknown".
    #[schemars(length(max = 160))]
    pub statement: String,
    pub source: Source,
}

impl Deliverable for PlanCapacity {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: add_capacity_trigger),
                pattern!(Self: assumptions[_]),
            ],
            sourced: vec![
                pattern!(Self: constraints[_].capacity),
                pattern!(Self: constraints[_].demand_at_target),
                pattern!(Self: growth_target.statement),
            ],
            ..Kinds::default()
        }
    }

    /// CONTRACT 8: a capacity plan without the data to decide is low confidence by definition.
    fn low_confidence(&self) -> bool {
        self.verdict == Verdict::InsufficientData
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let verdict = self.verdict;
        let constraints = &self.constraints;
        let statuses: Vec<Load> = constraints.iter().map(|c| c.status).collect();
        if verdict == Verdict::InsufficientData && cx.thinking.confidence.is_some_and(|c| c != "low")
        {
            push(
                out,
                Thinking::CONFIDENCE,
                "must be low when verdict is insufficient_data",
            );
        }
        let need = match verdict {
            Verdict::InsufficientData if !statuses.contains(&Load::Unknown) => {
                Some("insufficient_data needs at least one constraint with status unknown")
            }
            Verdict::AbsorbsGrowth if statuses.contains(&Load::OverLimit) => {
                Some("absorbs_growth cannot have a constraint over_limit")
            }
            Verdict::CannotAbsorb if !statuses.contains(&Load::OverLimit) => {
                Some("cannot_absorb needs a constraint over_limit")
            }
            Verdict::AbsorbsWithChanges
                if !statuses
                    .iter()
                    .any(|s| matches!(s, Load::AtLimit | Load::OverLimit)) =>
            {
                Some("absorbs_with_changes needs a constraint at_limit or over_limit")
            }
            _ => None,
        };
        if let Some(need) = need {
            push(
                out,
                at!(self.verdict),
                format!("must agree with the constraints: {need}"),
            );
        }
        for (i, c) in constraints.iter().enumerate() {
            let t = cx.tracing;
            t.sourced(&at!(self.constraints[i].capacity), c.source, &c.capacity, out);
            t.sourced(
                &at!(self.constraints[i].demand_at_target),
                c.source,
                &c.demand_at_target,
                out,
            );
            let blind = unknown(&c.capacity) || unknown(&c.demand_at_target);
            if blind && c.status != Load::Unknown {
                push(
                    out,
                    at!(self.constraints[i].status),
                    "must be unknown while capacity or demand_at_target is unknown",
                );
            }
        }
        distinct(
            constraints.iter().map(|c| c.resource.as_str()),
            |i| at!(self.constraints[i].resource),
            "resource",
            out,
        );
        distinct(
            self.levers.iter().map(|l| name(l.lever)),
            |i| at!(self.levers[i].lever),
            "lever",
            out,
        );
        if !unknown(&self.bottleneck) {
            let bw = content_words(&self.bottleneck);
            let named = constraints
                .iter()
                .any(|c| content_words(&c.resource).iter().any(|w| bw.contains(w)));
            if !constraints.is_empty() && !named {
                push(
                    out,
                    at!(self.bottleneck),
                    "must name one of constraints[].resource, or be \"unknown\"",
                );
            }
        }
        let target = &self.growth_target;
        cx.tracing.sourced(
            &at!(self.growth_target.statement),
            target.source,
            &target.statement,
            out,
        );
        if target.source == Source::NotProvided && verdict != Verdict::InsufficientData {
            push(
                out,
                at!(self.growth_target.source),
                "is not_provided, so the verdict must be insufficient_data: growth cannot be judged without a target",
            );
        }
    }
}
