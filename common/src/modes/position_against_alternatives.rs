//! position_against_alternatives: a wedge against one of the alternatives named, and only the
//! caller's own claims marked as theirs.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::{content_words, same};
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::PositionAgainstAlternatives,
    tier: Tier::Flagship,
    summary: "Finds the competitive wedge against what buyers choose instead of you.",
    purpose: "finds a competitive wedge",
    recommended_context: &[
        "company.what_they_sell",
        "audience.icp",
        "offer.price_usd",
        "company.industry",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PositionAgainstAlternatives {
    #[schemars(length(min = 1, max = 4))]
    pub alternatives: Vec<Alternative>,
    #[schemars(length(min = 1, max = 4))]
    pub unique_attributes: Vec<Attribute>,
    #[schemars(length(max = 200))]
    pub best_fit_customer: String,
    pub wedge: Wedge,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub claims_to_avoid: Vec<String>,
    #[schemars(length(max = 3), inner(length(max = 160)))]
    pub proof_to_collect: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Alternative {
    #[schemars(length(max = 80))]
    pub name: String,
    pub kind: AlternativeKind,
    #[schemars(length(max = 200))]
    pub why_chosen_today: String,
    #[schemars(length(max = 200))]
    pub where_it_falls_short: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlternativeKind {
    DirectCompetitor,
    DiyOrSpreadsheet,
    StatusQuo,
    HireOrAgency,
    AdjacentProduct,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Attribute {
    #[schemars(length(max = 120))]
    pub attribute: String,
    #[schemars(length(max = 200))]
    pub value_to_customer: String,
    pub proof: Proof,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Proof {
    CallerStated,
    Observable,
    NeedsEvidence,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Wedge {
    #[schemars(length(max = 280))]
    pub statement: String,
    /// One of alternatives[].name.
    #[schemars(length(max = 80))]
    pub against: String,
    #[schemars(length(max = 120))]
    pub market_frame: String,
    #[schemars(length(max = 240))]
    pub why_it_wins: String,
}

impl Deliverable for PositionAgainstAlternatives {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: claims_to_avoid[_]),
                pattern!(Self: proof_to_collect[_]),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, cx: &Ctx, out: &mut Vec<Violation>) {
        let alternatives = &self.alternatives;
        if !alternatives
            .iter()
            .any(|a| same(&a.name, &self.wedge.against))
        {
            push(
                out,
                at!(self.wedge.against),
                "must be one of alternatives[].name",
            );
        }
        distinct(
            alternatives.iter().map(|a| a.name.as_str()),
            |i| at!(self.alternatives[i].name),
            "alternative",
            out,
        );
        let said = content_words(cx.caller_text);
        for (i, a) in self.unique_attributes.iter().enumerate() {
            if a.proof != Proof::CallerStated {
                continue;
            }
            if !content_words(&a.attribute).iter().any(|w| said.contains(w)) {
                push(
                    out,
                    at!(self.unique_attributes[i].proof),
                    "is caller_stated, but the caller said nothing like this attribute: use observable or needs_evidence",
                );
            }
        }
    }
}
