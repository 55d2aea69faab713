//! scope_role: shares of the work that add up, a ruling that follows who is best placed to do
//! the work, and an agent brief exactly when an agent gets the work.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::{Ctx, Deliverable, Kinds, Source};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::ScopeRole,
    tier: Tier::Flagship,
    summary: "Defines a role and rules on hire vs agent vs do not fill.",
    purpose: "defines a role and rules on hire vs agent vs do not fill",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "metrics.monthly_revenue_usd",
        "metrics.leads_per_month",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScopeRole {
    #[schemars(length(max = 80))]
    pub role_title: String,
    #[schemars(length(max = 240))]
    pub mission: String,
    #[schemars(length(max = 80))]
    pub reports_to: String,
    #[schemars(length(min = 2, max = 5))]
    pub outcomes: Vec<RoleOutcome>,
    #[schemars(length(min = 3, max = 6), inner(length(max = 120)))]
    pub responsibilities: Vec<String>,
    #[schemars(length(min = 2, max = 6), inner(length(max = 80)))]
    pub competencies: Vec<String>,
    #[schemars(length(min = 2, max = 6))]
    pub work_mix: Vec<Work>,
    pub ruling: Ruling,
    #[schemars(length(max = 300))]
    pub ruling_rationale: String,
    #[schemars(length(max = 200))]
    pub revisit_when: String,
    /// Filled when the ruling is agent or agent_with_owner_review (goal, tasks and guardrails
    /// required; human_review required for agent_with_owner_review); empty strings and lists
    /// otherwise.
    pub agent_brief: AgentBrief,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RoleOutcome {
    #[schemars(length(max = 160))]
    pub outcome: String,
    #[schemars(length(max = 120))]
    pub measure: String,
    pub by: By,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum By {
    #[serde(rename = "30_days")]
    Days30,
    #[serde(rename = "90_days")]
    Days90,
    #[serde(rename = "6_months")]
    Months6,
    #[serde(rename = "12_months")]
    Months12,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Work {
    #[schemars(length(max = 100))]
    pub work: String,
    #[schemars(length(max = 20))]
    pub share: String,
    pub source: Source,
    pub best_done_by: Doer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Doer {
    NewHire,
    AiAgent,
    Contractor,
    ExistingTeam,
    Eliminate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ruling {
    HireFullTime,
    HirePartTime,
    Contract,
    Agent,
    AgentWithOwnerReview,
    DoNotFill,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentBrief {
    #[schemars(length(max = 200))]
    pub goal: String,
    #[schemars(length(max = 5), inner(length(max = 120)))]
    pub tasks: Vec<String>,
    #[schemars(length(max = 4), inner(length(max = 120)))]
    pub tools_and_data: Vec<String>,
    #[schemars(length(max = 4), inner(length(max = 160)))]
    pub guardrails: Vec<String>,
    #[schemars(length(max = 160))]
    pub human_review: String,
}

impl Deliverable for ScopeRole {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: role_title),
                pattern!(Self: mission),
                pattern!(Self: outcomes[_].*),
                pattern!(Self: responsibilities[_]),
                pattern!(Self: competencies[_]),
                pattern!(Self: revisit_when),
                pattern!(Self: agent_brief.*),
                pattern!(Self: agent_brief.*[_]),
            ],
            sourced: vec![pattern!(Self: work_mix[_].share)],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let mix = &self.work_mix;
        for (i, w) in mix.iter().enumerate() {
            cx.tracing
                .sourced(&at!(self.work_mix[i].share), w.source, &w.share, out);
        }
        distinct(
            mix.iter().map(|w| w.work.as_str()),
            |i| at!(self.work_mix[i].work),
            "kind of work",
            out,
        );
        let by = |who: Doer| mix.iter().filter(move |w| w.best_done_by == who);
        let shares: Option<Vec<f64>> = mix
            .iter()
            .map(|w| cx.tracing.figures(&w.share).first().map(|f| f.value))
            .collect();
        if let Some(shares) = &shares {
            let total: f64 = shares.iter().sum();
            if !mix.is_empty() && !(99.0..=101.0).contains(&total) {
                push(
                    out,
                    at!(self.work_mix),
                    format!("shares must add up to 100%, add up to {total}%"),
                );
            }
        }
        let agent_share = match &shares {
            Some(s) => {
                mix.iter()
                    .zip(s)
                    .filter(|(w, _)| w.best_done_by == Doer::AiAgent)
                    .map(|(_, v)| v)
                    .sum::<f64>()
                    / s.iter().sum::<f64>().max(1.0)
            }
            None => by(Doer::AiAgent).count() as f64 / mix.len().max(1) as f64,
        };
        let ruling = self.ruling;
        let fault = match ruling {
            Ruling::Agent | Ruling::AgentWithOwnerReview if agent_share <= 0.5 => {
                Some("an agent ruling needs most of work_mix to be best_done_by ai_agent")
            }
            Ruling::DoNotFill
                if mix
                    .iter()
                    .any(|w| !matches!(w.best_done_by, Doer::Eliminate | Doer::ExistingTeam)) =>
            {
                Some(
                    "do_not_fill needs every kind of work to be eliminated or absorbed by the existing team",
                )
            }
            Ruling::HireFullTime | Ruling::HirePartTime if by(Doer::NewHire).next().is_none() => {
                Some("a hire needs work in work_mix best_done_by new_hire")
            }
            Ruling::Contract if by(Doer::Contractor).next().is_none() => {
                Some("a contract needs work in work_mix best_done_by contractor")
            }
            _ => None,
        };
        if let Some(f) = fault {
            push(
                out,
                at!(self.ruling),
                format!("must follow the work mix: {f}"),
            );
        }
        let some_agent_work = by(Doer::AiAgent).next().is_some();
        self.agent_brief(some_agent_work, out);
    }
}

impl ScopeRole {
    /// The brief is filled for an agent ruling, may be filled when some of the work goes to an
    /// agent, and is left empty ("" and []) otherwise.
    fn agent_brief(&self, some_agent_work: bool, out: &mut Vec<Violation>) {
        let b = &self.agent_brief;
        let text = |s: &str| !s.trim().is_empty();
        let goal = (text(&b.goal), at!(self.agent_brief.goal));
        let tasks = (!b.tasks.is_empty(), at!(self.agent_brief.tasks));
        let tools = (
            !b.tools_and_data.is_empty(),
            at!(self.agent_brief.tools_and_data),
        );
        let guardrails = (!b.guardrails.is_empty(), at!(self.agent_brief.guardrails));
        let review = (text(&b.human_review), at!(self.agent_brief.human_review));
        match self.ruling {
            Ruling::Agent | Ruling::AgentWithOwnerReview => {
                for (filled, path) in [goal, tasks, guardrails] {
                    if !filled {
                        push(out, path, "must be filled when the ruling is an agent");
                    }
                }
                if self.ruling == Ruling::AgentWithOwnerReview && !review.0 {
                    push(
                        out,
                        review.1,
                        "must say who reviews what when the ruling is agent_with_owner_review",
                    );
                }
            }
            _ if !some_agent_work => {
                for (filled, path) in [goal, tasks, tools, guardrails, review] {
                    if filled {
                        push(
                            out,
                            path,
                            "must be empty (\"\" or []) when no work goes to an agent",
                        );
                    }
                }
            }
            _ => {}
        }
    }
}
