//! map_accountability: one owner per outcome, owners apart from contributors, and conflicts for
//! every outcome whose ownership is shared or missing.

use super::path::{at, pattern};
use super::rules::{distinct, push};
use super::words::same;
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::MapAccountability,
    tier: Tier::Deep,
    summary: "Maps every outcome to a single owner and surfaces conflicts and overload.",
    purpose: "maps outcomes to single owners",
    recommended_context: &[
        "company.what_they_sell",
        "company.stage",
        "metrics.monthly_revenue_usd",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MapAccountability {
    #[schemars(length(min = 3, max = 10))]
    pub outcomes: Vec<Outcome>,
    #[schemars(length(min = 1, max = 8))]
    pub seats: Vec<Seat>,
    #[schemars(length(max = 4))]
    pub conflicts: Vec<Conflict>,
    #[schemars(length(max = 3), inner(length(max = 60)))]
    pub overloaded: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Outcome {
    #[schemars(length(max = 120))]
    pub outcome: String,
    #[schemars(length(max = 100))]
    pub metric: String,
    /// Exactly one owner: no "and", "/" or "&".
    #[schemars(length(max = 60))]
    pub owner: String,
    #[schemars(length(max = 4), inner(length(max = 60)))]
    pub contributors: Vec<String>,
    pub cadence: Cadence,
    pub status: Ownership,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cadence {
    Weekly,
    Monthly,
    Quarterly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ownership {
    Clear,
    SharedNeedsSingleOwner,
    Orphaned,
    OwnerOverloaded,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Seat {
    #[schemars(length(max = 60))]
    pub seat: String,
    #[schemars(length(max = 60))]
    pub holder: String,
    #[schemars(length(min = 3, max = 5), inner(length(max = 120)))]
    pub responsibilities: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Conflict {
    #[schemars(length(max = 120))]
    pub outcome: String,
    #[schemars(length(max = 160))]
    pub issue: String,
    #[schemars(length(max = 160))]
    pub resolution: String,
}

/// Role names that contain "and" but are one function.
const ONE_ROLE_PHRASES: [&str; 6] = [
    "research and development",
    "health and safety",
    "learning and development",
    "mergers and acquisitions",
    "profit and loss",
    "accounts payable and receivable",
];

/// True when `owner` joins two owners: "and" between words, or `&` / `/` between whole words
/// ("Ops/Finance", "Owner & manager"), but not inside an abbreviation ("R&D", "A/R").
pub fn two_owners(owner: &str) -> bool {
    let mut lower = format!(" {} ", owner.to_lowercase());
    for p in ONE_ROLE_PHRASES {
        lower = lower.replace(p, "x");
    }
    if lower.contains(" and ") {
        return true;
    }
    let chars: Vec<char> = lower.chars().collect();
    chars.iter().enumerate().any(|(i, c)| {
        if !matches!(c, '&' | '/' | '+') {
            return false;
        }
        let spaced = chars[i - 1].is_whitespace() || chars[i + 1].is_whitespace();
        let left = chars[..i]
            .iter()
            .rev()
            .take_while(|c| c.is_alphanumeric())
            .count();
        let right = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_alphanumeric())
            .count();
        spaced || (left >= 2 && right >= 2)
    })
}

impl Deliverable for MapAccountability {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: outcomes[_].outcome),
                pattern!(Self: outcomes[_].metric),
                pattern!(Self: seats[_].responsibilities[_]),
                pattern!(Self: conflicts[_].resolution),
            ],
            ..Kinds::default()
        }
    }

    fn check(&self, _: &Ctx, out: &mut Vec<Violation>) {
        let outcomes = &self.outcomes;
        let conflicts: Vec<&str> = self.conflicts.iter().map(|c| c.outcome.as_str()).collect();
        let overloaded = &self.overloaded;
        for (i, o) in outcomes.iter().enumerate() {
            let owner = o.owner.as_str();
            if two_owners(owner) {
                push(
                    out,
                    at!(self.outcomes[i].owner),
                    "must be one owner: no \"and\", \"/\" or \"&\" between two names",
                );
            }
            for (j, c) in o.contributors.iter().enumerate() {
                if same(c, owner) {
                    push(
                        out,
                        at!(self.outcomes[i].contributors[j]),
                        "must not be the owner: the owner is not also a contributor",
                    );
                }
            }
            match o.status {
                s @ (Ownership::SharedNeedsSingleOwner | Ownership::Orphaned)
                    if !conflicts.iter().any(|c| same(c, &o.outcome)) =>
                {
                    let s = super::rules::name(s);
                    push(
                        out,
                        at!(self.outcomes[i].status),
                        format!("is {s}, so conflicts must have an entry for this outcome"),
                    );
                }
                Ownership::OwnerOverloaded if !overloaded.iter().any(|x| same(x, owner)) => {
                    push(
                        out,
                        at!(self.outcomes[i].status),
                        "is owner_overloaded, so the owner must be listed in overloaded",
                    );
                }
                _ => {}
            }
        }
        let holders: Vec<&str> = self
            .seats
            .iter()
            .map(|s| s.holder.as_str())
            .chain(outcomes.iter().map(|o| o.owner.as_str()))
            .collect();
        for (j, who) in overloaded.iter().enumerate() {
            if !holders.iter().any(|h| same(h, who)) {
                push(
                    out,
                    at!(self.overloaded[j]),
                    "must be a seat holder or an outcome owner",
                );
            }
        }
        for (j, c) in conflicts.iter().enumerate() {
            if !outcomes.iter().any(|o| same(&o.outcome, c)) {
                push(
                    out,
                    at!(self.conflicts[j].outcome),
                    "must be one of outcomes[].outcome",
                );
            }
        }
        distinct(
            outcomes.iter().map(|o| o.outcome.as_str()),
            |i| at!(self.outcomes[i].outcome),
            "outcome",
            out,
        );
        distinct(
            self.seats.iter().map(|s| s.seat.as_str()),
            |i| at!(self.seats[i].seat),
            "seat",
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::two_owners;

    #[test]
    fn one_owner_may_have_an_abbreviation_but_not_two_names() {
        for one in [
            "Head of R&D",
            "P&L owner",
            "A/R clerk",
            "Head of Research and Development",
            "Brand manager",
        ] {
            assert!(!two_owners(one), "{one}");
        }
        for two in [
            "Practice manager and owner",
            "Ops/Finance",
            "Owner & manager",
            "Sales&Marketing",
            "Ops / Finance",
        ] {
            assert!(two_owners(two), "{two}");
        }
    }
}
