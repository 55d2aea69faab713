//! draft_sop: steps numbered in order, done by roles the SOP names, each starting with a verb,
//! and a caveat wherever it states a legal rule.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::{has_any, same, words};
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::DraftSop,
    tier: Tier::Flagship,
    summary: "Turns a process into a standard operating procedure with roles and checks.",
    purpose: "turns a process into an SOP",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "company.industry",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DraftSop {
    #[schemars(length(max = 100))]
    pub title: String,
    #[schemars(length(max = 240))]
    pub purpose: String,
    pub scope: Scope,
    #[schemars(length(max = 160))]
    pub trigger: String,
    #[schemars(length(min = 1, max = 5))]
    pub roles: Vec<Role>,
    #[schemars(length(max = 5), inner(length(max = 120)))]
    pub prerequisites: Vec<String>,
    #[schemars(length(min = 3, max = 15))]
    pub steps: Vec<Step>,
    #[schemars(length(min = 1, max = 4), inner(length(max = 160)))]
    pub quality_checks: Vec<String>,
    #[schemars(length(max = 4))]
    pub exceptions: Vec<Exception>,
    #[schemars(length(max = 3), inner(length(max = 120)))]
    pub records: Vec<String>,
    /// One of roles[].role.
    #[schemars(length(max = 60))]
    pub owner_role: String,
    pub review_cadence: Cadence,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Scope {
    #[schemars(length(max = 200))]
    pub applies_to: String,
    #[schemars(length(max = 200))]
    pub excludes: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Role {
    #[schemars(length(max = 60))]
    pub role: String,
    #[schemars(length(max = 160))]
    pub responsibility: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Step {
    /// Step number; n runs 1..k in order.
    #[schemars(range(min = 1, max = 15))]
    pub n: i64,
    /// One of roles[].role.
    #[schemars(length(max = 60))]
    pub role: String,
    #[schemars(length(max = 200))]
    pub action: String,
    #[schemars(length(max = 160))]
    pub output_or_check: String,
    /// Empty string when the step has no decision.
    #[schemars(length(max = 160))]
    pub decision: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Exception {
    #[schemars(length(max = 120))]
    pub condition: String,
    #[schemars(length(max = 160))]
    pub response: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cadence {
    Monthly,
    Quarterly,
    Semiannual,
    Annual,
    OnChange,
}

/// Words that make a sentence a statement about the law.
const LEGAL: [&str; 9] = [
    "law",
    "laws",
    "legal",
    "legally",
    "statute",
    "statutory",
    "regulation",
    "regulations",
    "regulatory",
];

/// A caveat that sends the caller to confirm a legal rule holds one of these verbs ...
const CONFIRM: [&str; 3] = ["confirm", "check", "verify"];
/// ... and names the rule or who sets it.
const LOCAL_RULES: [&str; 11] = [
    "local",
    "state",
    "law",
    "laws",
    "rule",
    "rules",
    "legal",
    "statute",
    "regulation",
    "lawyer",
    "attorney",
];

/// First words that show an action is not an instruction.
const NOT_VERBS: [&str; 12] = [
    "the", "a", "an", "this", "that", "it", "they", "we", "i", "you", "he", "she",
];

impl Deliverable for DraftSop {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: title),
                pattern!(Self: scope.*),
                pattern!(Self: trigger),
                pattern!(Self: roles[_].*),
                pattern!(Self: prerequisites[_]),
                pattern!(Self: steps[_].*),
                pattern!(Self: quality_checks[_]),
                pattern!(Self: exceptions[_].*),
                pattern!(Self: records[_]),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let known = |r: &str| self.roles.iter().any(|x| same(&x.role, r));
        for (i, step) in self.steps.iter().enumerate() {
            if step.n != i as i64 + 1 {
                push(
                    out,
                    at!(self.steps[i].n),
                    format!("must be {}: n runs 1, 2, 3… in order", i + 1),
                );
            }
            if !known(&step.role) {
                push(out, at!(self.steps[i].role), "must be one of roles[].role");
            }
            let first = words(&step.action).into_iter().next();
            if let Some(w) = first.filter(|w| NOT_VERBS.contains(&w.as_str())) {
                push(
                    out,
                    at!(self.steps[i].action),
                    format!("must start with a verb (\"Inspect…\"), not \"{w}\""),
                );
            }
        }
        if !known(&self.owner_role) {
            push(out, at!(self.owner_role), "must be one of roles[].role");
        }
        distinct(
            self.roles.iter().map(|r| r.role.as_str()),
            |i| at!(self.roles[i].role),
            "role",
            out,
        );
        let texts = cx.texts();
        let legal = texts.iter().find(|(_, s)| has_any(s, &LEGAL));
        if let Some((path, _)) = legal
            && !cx.caveat_says(&CONFIRM, &LOCAL_RULES)
        {
            push(
                out,
                path.clone(),
                "states a legal rule: add a caveat telling the caller to confirm the local rule",
            );
        }
    }
}
