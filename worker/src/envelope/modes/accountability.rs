//! map_accountability: one owner per outcome, owners apart from contributors, and conflicts for
//! every outcome whose ownership is shared or missing.

use super::shared::{Ctx, distinct};
use crate::envelope::text::{items, push, same, text};
use grove_common::schema::Violation;
use serde_json::Value;

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

pub fn accountability(cx: &Ctx, out: &mut Vec<Violation>) {
    let d = cx.d;
    let outcomes = items(d.get("outcomes"));
    let conflicts: Vec<&str> = items(d.get("conflicts"))
        .iter()
        .filter_map(|c| text(c, "outcome"))
        .collect();
    let overloaded: Vec<&str> = items(d.get("overloaded"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (i, o) in outcomes.iter().enumerate() {
        let at = |k: &str| format!("/deliverable/outcomes/{i}/{k}");
        let owner = text(o, "owner");
        if owner.is_some_and(two_owners) {
            push(
                out,
                at("owner"),
                "must be one owner: no \"and\", \"/\" or \"&\" between two names",
            );
        }
        if let Some(owner) = owner {
            for (j, c) in items(o.get("contributors")).iter().enumerate() {
                if c.as_str().is_some_and(|c| same(c, owner)) {
                    push(
                        out,
                        format!("{}/{j}", at("contributors")),
                        "must not be the owner: the owner is not also a contributor",
                    );
                }
            }
        }
        let outcome = text(o, "outcome").unwrap_or_default();
        match text(o, "status") {
            Some(s @ ("shared_needs_single_owner" | "orphaned"))
                if !conflicts.iter().any(|c| same(c, outcome)) =>
            {
                push(
                    out,
                    at("status"),
                    format!("is {s}, so conflicts must have an entry for this outcome"),
                );
            }
            Some("owner_overloaded")
                if !owner.is_some_and(|w| overloaded.iter().any(|x| same(x, w))) =>
            {
                push(
                    out,
                    at("status"),
                    "is owner_overloaded, so the owner must be listed in overloaded",
                );
            }
            _ => {}
        }
    }
    let holders: Vec<&str> = items(d.get("seats"))
        .iter()
        .filter_map(|s| text(s, "holder"))
        .chain(outcomes.iter().filter_map(|o| text(o, "owner")))
        .collect();
    for (j, who) in overloaded.iter().enumerate() {
        if !holders.iter().any(|h| same(h, who)) {
            push(
                out,
                format!("/deliverable/overloaded/{j}"),
                "must be a seat holder or an outcome owner",
            );
        }
    }
    for (j, c) in conflicts.iter().enumerate() {
        if !outcomes
            .iter()
            .any(|o| text(o, "outcome").is_some_and(|t| same(t, c)))
        {
            push(
                out,
                format!("/deliverable/conflicts/{j}/outcome"),
                "must be one of outcomes[].outcome",
            );
        }
    }
    distinct(
        outcomes,
        Some("outcome"),
        "/deliverable/outcomes",
        "outcome",
        out,
    );
    distinct(
        items(d.get("seats")),
        Some("seat"),
        "/deliverable/seats",
        "seat",
        out,
    );
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
