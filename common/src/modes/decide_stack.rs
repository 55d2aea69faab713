//! decide_stack: a decision record whose choice is one of its options, built only where the
//! capability differentiates, deleted where it is not needed, with costs that follow their
//! source.

use super::path::{at, pattern};
use super::rules::{distinct, name, push};
use super::{Ctx, Deliverable, Kinds, Source};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::DecideStack,
    tier: Tier::Flagship,
    summary: "Gives a build-vs-buy-vs-delete decision record for one capability.",
    purpose: "gives a build-vs-buy-vs-delete decision record",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "metrics.monthly_revenue_usd",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DecideStack {
    #[schemars(length(max = 100))]
    pub title: String,
    // A record is only ever proposed; read as text so that another word is reported as a rule,
    // not as a deliverable of the wrong shape.
    #[schemars(schema_with = "proposed")]
    pub status: String,
    #[schemars(length(max = 400))]
    pub context: String,
    /// not_needed requires decision.choice delete.
    pub capability_class: CapabilityClass,
    #[schemars(length(min = 2, max = 4))]
    pub options: Vec<StackOption>,
    pub decision: Decision,
    pub consequences: Consequences,
    #[schemars(length(max = 200))]
    pub revisit_when: String,
    pub switching_cost: SwitchingCost,
}

const PROPOSED: &str = "proposed";

fn proposed(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"const": PROPOSED})
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityClass {
    CoreDifferentiator,
    Commodity,
    NotNeeded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    Build,
    Buy,
    Delete,
    Keep,
    Partner,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StackOption {
    pub option: Choice,
    #[schemars(length(max = 200))]
    pub summary: String,
    #[schemars(length(max = 80))]
    pub cost: String,
    pub source: Source,
    #[schemars(length(min = 1, max = 3), inner(length(max = 120)))]
    pub pros: Vec<String>,
    #[schemars(length(min = 1, max = 3), inner(length(max = 120)))]
    pub cons: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Decision {
    /// One of options[].option.
    pub choice: Choice,
    #[schemars(length(max = 240))]
    pub statement: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Consequences {
    #[schemars(length(min = 1, max = 3), inner(length(max = 160)))]
    pub positive: Vec<String>,
    #[schemars(length(min = 1, max = 3), inner(length(max = 160)))]
    pub negative: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SwitchingCost {
    /// What moving to the choice costs (money, hours, migration), or "unknown".
    #[schemars(length(max = 160))]
    pub estimate: String,
    pub source: Source,
}

impl Deliverable for DecideStack {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: decision.statement),
                pattern!(Self: revisit_when),
            ],
            facts: vec![pattern!(Self: context)],
            sourced: vec![
                pattern!(Self: options[_].cost),
                pattern!(Self: switching_cost.estimate),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let options = &self.options;
        let class = self.capability_class;
        let choice = self.decision.choice;
        if !options.iter().any(|o| o.option == choice) {
            push(
                out,
                at!(self.decision.choice),
                "must be one of options[].option",
            );
        }
        if class == CapabilityClass::NotNeeded && choice != Choice::Delete {
            push(
                out,
                at!(self.decision.choice),
                "must be delete when capability_class is not_needed",
            );
        }
        if choice == Choice::Build && class != CapabilityClass::CoreDifferentiator {
            push(
                out,
                at!(self.decision.choice),
                "may be build only when capability_class is core_differentiator",
            );
        }
        if self.status != PROPOSED {
            push(out, at!(self.status), "must be proposed");
        }
        distinct(
            options.iter().map(|o| name(o.option)),
            |i| at!(self.options[i].option),
            "option",
            out,
        );
        for (i, o) in options.iter().enumerate() {
            cx.tracing
                .sourced(&at!(self.options[i].cost), o.source, &o.cost, out);
        }
        let sc = &self.switching_cost;
        cx.tracing.sourced(
            &at!(self.switching_cost.estimate),
            sc.source,
            &sc.estimate,
            out,
        );
    }
}
