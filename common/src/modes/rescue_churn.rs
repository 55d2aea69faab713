//! rescue_churn: classes that follow their reasons, shares that are parts of one whole, revenue
//! at stake that traces, and save plays only for churn that can be prevented.

use super::path::{at, pattern};
use super::rules::{distinct, name, push, unknown};
use super::words::same;
use super::{Ctx, Deliverable, Kinds, Source};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::RescueChurn,
    tier: Tier::Flagship,
    summary: "Separates preventable churn from churn to accept, with save plays for the first.",
    purpose: "separates preventable churn from churn to accept",
    recommended_context: &[
        "metrics.monthly_churn_pct",
        "metrics.average_order_value_usd",
        "audience.icp",
        "company.what_they_sell",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RescueChurn {
    #[schemars(length(min = 1, max = 6))]
    pub churn_segments: Vec<Segment>,
    #[schemars(length(min = 1, max = 4))]
    pub save_plays: Vec<SavePlay>,
    #[schemars(length(max = 240))]
    pub accept_policy: String,
    #[schemars(length(min = 1, max = 4))]
    pub early_warning: Vec<Warning>,
    #[schemars(length(min = 1, max = 3), inner(length(max = 160)))]
    pub exit_questions: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Segment {
    #[schemars(length(max = 120))]
    pub segment: String,
    /// payment_failure requires class preventable; business_closed and need_ended require class
    /// accept.
    pub reason: Reason,
    pub class: Class,
    #[schemars(length(max = 40))]
    pub share: String,
    pub source: Source,
    pub evidence: Evidence,
    #[schemars(length(max = 200))]
    pub rationale: String,
    /// Revenue this segment costs per month, from the caller's figures, or "unknown".
    #[schemars(length(max = 60))]
    pub monthly_revenue_at_stake: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    OnboardingFailure,
    ValueNotRealized,
    ServiceFailure,
    PriceValueMismatch,
    CompetitorSwitch,
    PaymentFailure,
    BusinessClosed,
    PoorFit,
    NeedEnded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Preventable,
    Accept,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    CallerData,
    CallerAnecdote,
    Inferred,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SavePlay {
    /// A churn_segments[].segment whose class is preventable.
    #[schemars(length(max = 120))]
    pub segment: String,
    #[schemars(length(max = 200))]
    pub play: String,
    pub timing: Timing,
    #[schemars(length(max = 60))]
    pub owner_role: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    Onboarding,
    AtRiskSignal,
    PreRenewal,
    CancelRequest,
    WinBack,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Warning {
    #[schemars(length(max = 120))]
    pub signal: String,
    #[schemars(length(max = 120))]
    pub rule: String,
}

impl Deliverable for RescueChurn {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: save_plays[_].play),
                pattern!(Self: accept_policy),
                pattern!(Self: early_warning[_].*),
                pattern!(Self: exit_questions[_]),
            ],
            facts: vec![pattern!(Self: churn_segments[_].rationale)],
            sourced: vec![
                pattern!(Self: churn_segments[_].share),
                pattern!(Self: churn_segments[_].monthly_revenue_at_stake),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let segments = &self.churn_segments;
        let mut total = 0.0;
        for (i, s) in segments.iter().enumerate() {
            let required = match s.reason {
                Reason::PaymentFailure => Some(Class::Preventable),
                Reason::BusinessClosed | Reason::NeedEnded => Some(Class::Accept),
                _ => None,
            };
            if let Some(required) = required
                && s.class != required
            {
                push(
                    out,
                    at!(self.churn_segments[i].class),
                    format!(
                        "must be {} when reason is {}",
                        name(required),
                        name(s.reason)
                    ),
                );
            }
            cx.tracing
                .sourced(&at!(self.churn_segments[i].share), s.source, &s.share, out);
            if let Some(share) = cx.tracing.figures(&s.share).into_iter().next()
                && share.percent
            {
                total += share.value;
            }
            if !unknown(&s.monthly_revenue_at_stake) {
                cx.tracing.trace(
                    &at!(self.churn_segments[i].monthly_revenue_at_stake),
                    &s.monthly_revenue_at_stake,
                    out,
                );
            }
        }
        if total > 101.0 {
            push(
                out,
                at!(self.churn_segments),
                format!("shares add up to {total}%: segments are separate parts of churn"),
            );
        }
        distinct(
            segments.iter().map(|s| s.segment.as_str()),
            |i| at!(self.churn_segments[i].segment),
            "segment",
            out,
        );
        for (j, play) in self.save_plays.iter().enumerate() {
            let found = segments.iter().find(|s| same(&s.segment, &play.segment));
            let at = at!(self.save_plays[j].segment);
            match found.map(|s| s.class) {
                None => push(out, at, "must be one of churn_segments[].segment"),
                Some(Class::Preventable) => {}
                Some(Class::Accept) => push(
                    out,
                    at,
                    "must name a preventable segment, not one to accept",
                ),
            }
        }
    }
}
