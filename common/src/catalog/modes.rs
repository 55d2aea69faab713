//! The sixteen modes: tier (hence price and caps), summary and recommended context (spec 2.2).

use super::{Mode, Tier};

pub static MODES: [Mode; 16] = [
    Mode {
        id: "diagnose_growth",
        tier: Tier::Short,
        summary: "Finds the one binding growth constraint and ranks the levers that move it.",
        recommended_context: &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
        ],
    },
    Mode {
        id: "design_offer",
        tier: Tier::Deep,
        summary: "Designs an offer: promise, price point, guarantee, inclusions and bonuses.",
        recommended_context: &[
            "company.what_they_sell",
            "audience.icp",
            "audience.pain",
            "offer.price_usd",
        ],
    },
    Mode {
        id: "rewrite_pricing",
        tier: Tier::Deep,
        summary: "Produces tiered pricing with a migration note for current customers.",
        recommended_context: &[
            "offer.price_usd",
            "offer.promise",
            "metrics.average_order_value_usd",
            "audience.icp",
        ],
    },
    Mode {
        id: "funnel_review",
        tier: Tier::Deep,
        summary: "Walks the funnel stage by stage and finds the biggest leak.",
        recommended_context: &[
            "metrics.traffic_per_month",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
            "company.website",
        ],
    },
    Mode {
        id: "write_outbound_sequence",
        tier: Tier::Deep,
        summary: "Writes a ready-to-send outbound sequence with declared merge fields.",
        recommended_context: &[
            "audience.icp",
            "audience.pain",
            "offer.promise",
            "company.what_they_sell",
        ],
    },
    Mode {
        id: "audit_function",
        tier: Tier::Deep,
        summary: "Scores a business function 0-100 with findings, a top priority and quick wins.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
    Mode {
        id: "handle_objections",
        tier: Tier::Flagship,
        summary: "Gives verbatim responses to the objections that kill deals, costliest first.",
        recommended_context: &[
            "offer.price_usd",
            "offer.promise",
            "audience.icp",
            "metrics.close_rate_pct",
        ],
    },
    Mode {
        id: "position_against_alternatives",
        tier: Tier::Flagship,
        summary: "Finds the competitive wedge against what buyers choose instead of you.",
        recommended_context: &[
            "company.what_they_sell",
            "audience.icp",
            "offer.price_usd",
            "company.industry",
        ],
    },
    Mode {
        id: "plan_capacity",
        tier: Tier::Flagship,
        summary: "Models whether delivery can absorb the planned growth, and what to change if not.",
        recommended_context: &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.average_order_value_usd",
            "company.stage",
        ],
    },
    Mode {
        id: "draft_sop",
        tier: Tier::Flagship,
        summary: "Turns a process into a standard operating procedure with roles and checks.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    },
    Mode {
        id: "rescue_churn",
        tier: Tier::Flagship,
        summary: "Separates preventable churn from churn to accept, with save plays for the first.",
        recommended_context: &[
            "metrics.monthly_churn_pct",
            "metrics.average_order_value_usd",
            "audience.icp",
            "company.what_they_sell",
        ],
    },
    Mode {
        id: "plan_onboarding",
        tier: Tier::Deep,
        summary: "Designs the first two weeks after purchase around a first-value event.",
        recommended_context: &[
            "company.what_they_sell",
            "offer.promise",
            "audience.icp",
            "metrics.monthly_churn_pct",
        ],
    },
    Mode {
        id: "decide_stack",
        tier: Tier::Flagship,
        summary: "Gives a build-vs-buy-vs-delete decision record for one capability.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
    Mode {
        id: "map_automation",
        tier: Tier::Deep,
        summary: "Ranks what to automate, how, and what to keep manual.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    },
    Mode {
        id: "scope_role",
        tier: Tier::Flagship,
        summary: "Defines a role and rules on hire vs agent vs do not fill.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
            "metrics.leads_per_month",
        ],
    },
    Mode {
        id: "map_accountability",
        tier: Tier::Deep,
        summary: "Maps every outcome to a single owner and surfaces conflicts and overload.",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
];

/// Calls `$callback!` with the sixteen mode ids as string literals, in catalog order, after any
/// leading tokens. Files embedded per mode need literal paths (`include_str!`), so every such
/// list is spelled through this one; unit tests tie each embedded list to `MODES`.
#[macro_export]
macro_rules! with_mode_ids {
    ($callback:ident ! ( $($lead:tt)* )) => {
        $callback!(
            $($lead)*
            "diagnose_growth",
            "design_offer",
            "rewrite_pricing",
            "funnel_review",
            "write_outbound_sequence",
            "audit_function",
            "handle_objections",
            "position_against_alternatives",
            "plan_capacity",
            "draft_sop",
            "rescue_churn",
            "plan_onboarding",
            "decide_stack",
            "map_automation",
            "scope_role",
            "map_accountability",
        )
    };
}
