//! plan_onboarding: milestones and touchpoints in day order, and a first-value event that is
//! itself a milestone by its target day.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::content_words;
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::PlanOnboarding,
    tier: Tier::Deep,
    summary: "Designs the first two weeks after purchase around a first-value event.",
    purpose: "designs the first two weeks after purchase",
    recommended_context: &[
        "company.what_they_sell",
        "offer.promise",
        "audience.icp",
        "metrics.monthly_churn_pct",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanOnboarding {
    pub first_value: FirstValue,
    #[schemars(length(min = 1, max = 5), inner(length(max = 120)))]
    pub handoff_inputs: Vec<String>,
    /// In day order; days never decrease.
    #[schemars(length(min = 3, max = 8))]
    pub milestones: Vec<Milestone>,
    /// In day order; days never decrease.
    #[schemars(length(min = 2, max = 8))]
    pub touchpoints: Vec<Touchpoint>,
    #[schemars(length(min = 1, max = 4))]
    pub stall_signals: Vec<StallSignal>,
    #[schemars(length(max = 200))]
    pub day14_exit: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FirstValue {
    #[schemars(length(max = 200))]
    pub event: String,
    #[schemars(range(min = 1, max = 14))]
    pub target_day: i64,
    #[schemars(length(max = 160))]
    pub measured_by: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Milestone {
    #[schemars(range(min = 0, max = 14))]
    pub day: i64,
    #[schemars(length(max = 120))]
    pub milestone: String,
    pub owner: Owner,
    #[schemars(length(max = 160))]
    pub exit_criterion: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    Provider,
    Customer,
    Both,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Touchpoint {
    #[schemars(range(min = 0, max = 14))]
    pub day: i64,
    pub channel: TouchChannel,
    #[schemars(length(max = 120))]
    pub purpose: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TouchChannel {
    Call,
    Email,
    InApp,
    InPerson,
    Video,
    Chat,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StallSignal {
    #[schemars(length(max = 120))]
    pub signal: String,
    #[schemars(length(max = 160))]
    pub intervention: String,
}

impl Deliverable for PlanOnboarding {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: first_value.*),
                pattern!(Self: milestones[_].*),
                pattern!(Self: touchpoints[_].*),
                pattern!(Self: stall_signals[_].*),
                pattern!(Self: day14_exit),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, _: &Ctx, out: &mut Vec<Violation>) {
        let milestone_days = self.milestones.iter().map(|m| m.day);
        let touchpoint_days = self.touchpoints.iter().map(|t| t.day);
        never_decrease(milestone_days, |i| at!(self.milestones[i].day), out);
        never_decrease(touchpoint_days, |i| at!(self.touchpoints[i].day), out);
        let target = self.first_value.target_day;
        if !(1..=14).contains(&target) {
            push(
                out,
                at!(self.first_value.target_day),
                format!("must be from 1 to 14, is {target}"),
            );
        }
        // One milestone on or before the target day is the first-value event itself.
        let event_words = content_words(&self.first_value.event);
        let milestones = &self.milestones;
        if !event_words.is_empty()
            && !milestones.is_empty()
            && !milestones.iter().any(|m| {
                m.day <= target
                    && content_words(&m.milestone)
                        .iter()
                        .any(|w| event_words.contains(w))
            })
        {
            push(
                out,
                at!(self.first_value.target_day),
                "needs a milestone on or before this day that is the first-value event itself",
            );
        }
        distinct(
            milestones.iter().map(|m| m.milestone.as_str()),
            |i| at!(self.milestones[i].milestone),
            "milestone",
            out,
        );
    }
}

/// Each day no earlier than the one before it.
fn never_decrease(
    days: impl Iterator<Item = i64>,
    path: impl Fn(usize) -> String,
    out: &mut Vec<Violation>,
) {
    let mut prev: Option<i64> = None;
    for (i, day) in days.enumerate() {
        if let Some(p) = prev.filter(|p| day < *p) {
            push(
                out,
                path(i),
                format!("must not be before the previous day {p}: days never decrease"),
            );
        }
        prev = Some(day);
    }
}
