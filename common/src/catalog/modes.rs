//! The sixteen modes: tier (hence price and caps), summary and recommended context (spec 2.2).

use super::{ByMode, Mode, ModeId, Tier, ids::mode_index};

/// Keyed by [`ModeId`]: entry `i` is `ModeId::ALL[i]`, checked at compile time below.
pub static MODES: ByMode<Mode> = ByMode::new(TABLE);

const TABLE: [Mode; 16] = [
    Mode {
        id: ModeId::DiagnoseGrowth,
        tier: Tier::Short,
        summary: "Finds the one binding growth constraint and ranks the levers that move it.",
        purpose: "finds the one binding growth constraint and ranks levers",
        recommended_context: &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
        ],
    },
    Mode {
        id: ModeId::DesignOffer,
        tier: Tier::Deep,
        summary: "Designs an offer: promise, price point, guarantee, inclusions and bonuses.",
        purpose: "designs an offer",
        recommended_context: &[
            "company.what_they_sell",
            "audience.icp",
            "audience.pain",
            "offer.price_usd",
        ],
    },
    Mode {
        id: ModeId::RewritePricing,
        tier: Tier::Deep,
        summary: "Produces tiered pricing with a migration note for current customers.",
        purpose: "produces tiered pricing",
        recommended_context: &[
            "offer.price_usd",
            "offer.promise",
            "metrics.average_order_value_usd",
            "audience.icp",
        ],
    },
    Mode {
        id: ModeId::FunnelReview,
        tier: Tier::Deep,
        summary: "Walks the funnel stage by stage and finds the biggest leak.",
        purpose: "walks the funnel and finds the biggest leak",
        recommended_context: &[
            "metrics.traffic_per_month",
            "metrics.leads_per_month",
            "metrics.close_rate_pct",
            "company.website",
        ],
    },
    Mode {
        id: ModeId::WriteOutboundSequence,
        tier: Tier::Deep,
        summary: "Writes a ready-to-send outbound sequence with declared merge fields.",
        purpose: "writes a ready-to-send outbound sequence",
        recommended_context: &[
            "audience.icp",
            "audience.pain",
            "offer.promise",
            "company.what_they_sell",
        ],
    },
    Mode {
        id: ModeId::AuditFunction,
        tier: Tier::Deep,
        summary: "Scores a business function 0-100 with findings, a top priority and quick wins.",
        purpose: "scores a function 0-100",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
    Mode {
        id: ModeId::HandleObjections,
        tier: Tier::Flagship,
        summary: "Gives verbatim responses to the objections that kill deals, costliest first.",
        purpose: "gives verbatim responses to deal-killing objections",
        recommended_context: &[
            "offer.price_usd",
            "offer.promise",
            "audience.icp",
            "metrics.close_rate_pct",
        ],
    },
    Mode {
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
    },
    Mode {
        id: ModeId::PlanCapacity,
        tier: Tier::Flagship,
        summary: "Models whether delivery can absorb the planned growth, and what to change if not.",
        purpose: "models whether delivery can absorb growth",
        recommended_context: &[
            "company.what_they_sell",
            "metrics.monthly_revenue_usd",
            "metrics.average_order_value_usd",
            "company.stage",
        ],
    },
    Mode {
        id: ModeId::DraftSop,
        tier: Tier::Flagship,
        summary: "Turns a process into a standard operating procedure with roles and checks.",
        purpose: "turns a process into an SOP",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    },
    Mode {
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
    },
    Mode {
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
    },
    Mode {
        id: ModeId::DecideStack,
        tier: Tier::Flagship,
        summary: "Gives a build-vs-buy-vs-delete decision record for one capability.",
        purpose: "gives a build-vs-buy-vs-delete decision record",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
    Mode {
        id: ModeId::MapAutomation,
        tier: Tier::Deep,
        summary: "Ranks what to automate, how, and what to keep manual.",
        purpose: "ranks what to automate",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "company.industry",
        ],
    },
    Mode {
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
    },
    Mode {
        id: ModeId::MapAccountability,
        tier: Tier::Deep,
        summary: "Maps every outcome to a single owner and surfaces conflicts and overload.",
        purpose: "maps outcomes to single owners",
        recommended_context: &[
            "company.what_they_sell",
            "company.stage",
            "metrics.monthly_revenue_usd",
        ],
    },
];

const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            mode_index(TABLE[i].id) == i,
            "MODES must list the modes in ModeId order"
        );
        i += 1;
    }
};
