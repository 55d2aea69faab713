//! map_automation: candidates listed by rank, a stable rank-1 task as the pilot, judgment never
//! handed to a script, and hours saved that follow the caller's times.

use super::path::{at, pattern};
use super::rules::{distinct, name, push, unknown};
use super::words::same;
use super::{Ctx, Deliverable, Kinds, Source};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::MapAutomation,
    tier: Tier::Deep,
    summary: "Ranks what to automate, how, and what to keep manual.",
    purpose: "ranks what to automate",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "company.industry",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MapAutomation {
    #[schemars(length(min = 1, max = 8))]
    pub candidates: Vec<Candidate>,
    #[schemars(length(max = 3))]
    pub do_not_automate: Vec<Exclusion>,
    pub first_pilot: Pilot,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Candidate {
    /// Ranks run 1..k, unique.
    #[schemars(range(min = 1, max = 8))]
    pub rank: i64,
    #[schemars(length(max = 120))]
    pub task: String,
    pub frequency: Frequency,
    #[schemars(length(max = 40))]
    pub time_per_run: String,
    pub source: Source,
    /// judgment excludes approach no_code and script_or_integration.
    pub logic: Logic,
    pub input: Input,
    pub stability: Stability,
    pub approach: Approach,
    pub risk_if_wrong: Risk,
    #[schemars(length(max = 200))]
    pub rationale: String,
    /// Hours a week or month this saves, from the caller's figures, or "unknown".
    #[schemars(length(max = 60))]
    pub hours_saved: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Frequency {
    Daily,
    Weekly,
    Monthly,
    AdHoc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Logic {
    RuleBased,
    Mixed,
    Judgment,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    Structured,
    SemiStructured,
    Unstructured,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    Stable,
    Changing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approach {
    NoCode,
    ScriptOrIntegration,
    AiAssistWithReview,
    AiAgent,
    KeepManual,
    FixProcessFirst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Low,
    Medium,
    High,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Exclusion {
    #[schemars(length(max = 120))]
    pub task: String,
    #[schemars(length(max = 160))]
    pub reason: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Pilot {
    /// The rank-1 candidate's task.
    #[schemars(length(max = 120))]
    pub task: String,
    #[schemars(length(max = 160))]
    pub success_metric: String,
    pub review_after: ReviewAfter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReviewAfter {
    #[serde(rename = "1_week")]
    OneWeek,
    #[serde(rename = "2_weeks")]
    TwoWeeks,
    #[serde(rename = "1_month")]
    OneMonth,
}

impl Deliverable for MapAutomation {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![pattern!(Self: first_pilot.success_metric)],
            sourced: vec![
                pattern!(Self: candidates[_].time_per_run),
                pattern!(Self: candidates[_].hours_saved),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let candidates = &self.candidates;
        let k = candidates.len() as i64;
        for (i, c) in candidates.iter().enumerate() {
            if c.rank != i as i64 + 1 {
                push(
                    out,
                    at!(self.candidates[i].rank),
                    format!(
                        "must be {}: ranks run 1..{k}, each once, listed in rank order",
                        i + 1
                    ),
                );
            }
            if c.logic == Logic::Judgment
                && matches!(c.approach, Approach::NoCode | Approach::ScriptOrIntegration)
            {
                push(
                    out,
                    at!(self.candidates[i].approach),
                    format!("must not be {} when logic is judgment", name(c.approach)),
                );
            }
            cx.tracing.sourced(
                &at!(self.candidates[i].time_per_run),
                c.source,
                &c.time_per_run,
                out,
            );
            if !unknown(&c.hours_saved) {
                if unknown(&c.time_per_run) {
                    push(
                        out,
                        at!(self.candidates[i].hours_saved),
                        "must be \"unknown\" while time_per_run is unknown",
                    );
                } else {
                    cx.tracing
                        .trace(&at!(self.candidates[i].hours_saved), &c.hours_saved, out);
                }
            }
        }
        let first = candidates.iter().find(|c| c.rank == 1);
        if first.is_some_and(|c| c.stability == Stability::Changing) {
            push(
                out,
                at!(self.candidates[0].stability),
                "is changing, so this task should not be rank 1: fix the process first",
            );
        }
        if let Some(first) = first
            && !same(&first.task, &self.first_pilot.task)
        {
            push(
                out,
                at!(self.first_pilot.task),
                "must be the rank-1 candidate's task",
            );
        }
        distinct(
            candidates.iter().map(|c| c.task.as_str()),
            |i| at!(self.candidates[i].task),
            "task",
            out,
        );
    }
}
