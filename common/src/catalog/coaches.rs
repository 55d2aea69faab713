//! The seven coaches (spec 2.1), each with its own summary of every mode it offers.

use super::{ByCoach, Coach, CoachId, CoachMode, ModeId, ids::coach_index};

const fn m(mode: ModeId, summary: &'static str) -> CoachMode {
    CoachMode { mode, summary }
}

/// Keyed by [`CoachId`]: entry `i` is `CoachId::ALL[i]`, checked at compile time below.
pub static COACHES: ByCoach<Coach> = ByCoach::new(TABLE);

const TABLE: [Coach; 7] = [
    Coach {
        id: CoachId::Mary,
        name: "Mary",
        domain: "Growth strategy",
        tagline: "Finds the one constraint holding growth back, and the lever that moves it.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Names the single constraint on growth right now and ranks up to three levers against it.",
            ),
            m(
                ModeId::DesignOffer,
                "Shapes an offer around the outcome buyers already pay for, priced to the value of that outcome.",
            ),
            m(
                ModeId::RewritePricing,
                "Rebuilds your price list into tiers that pull buyers up rather than down.",
            ),
            m(
                ModeId::FunnelReview,
                "Follows a buyer from first visit to paid and puts a number on the worst leak.",
            ),
            m(
                ModeId::WriteOutboundSequence,
                "Writes a short outbound sequence aimed at the buyers most likely to say yes this quarter.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your growth engine end to end and says which weak spot to fix first.",
            ),
        ],
    },
    Coach {
        id: CoachId::Reed,
        name: "Reed",
        domain: "Sales",
        tagline: "Turns conversations into closed deals: offers, pricing, objections and outbound.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Finds where deals stall between first call and signature and what unblocks them.",
            ),
            m(
                ModeId::DesignOffer,
                "Packages what you sell so a buyer can say yes on the first call.",
            ),
            m(
                ModeId::RewritePricing,
                "Sets prices and tiers that survive a procurement conversation without discounting.",
            ),
            m(
                ModeId::HandleObjections,
                "Scripts word-for-word answers to the objections that cost you the most revenue.",
            ),
            m(
                ModeId::WriteOutboundSequence,
                "Writes a cold sequence that books meetings, with the follow-up rule your reps can run.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your sales process stage by stage and names the fix worth the most pipeline.",
            ),
        ],
    },
    Coach {
        id: CoachId::Iris,
        name: "Iris",
        domain: "Marketing",
        tagline: "Gets the right buyers to raise their hand, and tells you why they would pick you.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Finds whether demand, message or channel is what keeps buyers from raising their hand.",
            ),
            m(
                ModeId::FunnelReview,
                "Audits traffic, landing page and lead capture to find where attention leaks away.",
            ),
            m(
                ModeId::DesignOffer,
                "Frames an offer whose promise can be stated in one line on an ad or a landing page.",
            ),
            m(
                ModeId::PositionAgainstAlternatives,
                "Finds the wedge that makes you the obvious pick over the competitor, the spreadsheet or doing nothing.",
            ),
            m(
                ModeId::WriteOutboundSequence,
                "Writes a campaign-style sequence whose hook is the buyer's pain, not your features.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your marketing function and names the channel or message gap to close first.",
            ),
        ],
    },
    Coach {
        id: CoachId::Oak,
        name: "Oak",
        domain: "Operations",
        tagline: "Makes delivery repeatable so that growth does not break it.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Checks whether delivery, not demand, is what caps your growth.",
            ),
            m(
                ModeId::PlanCapacity,
                "Models whether your team and tools can absorb the growth you plan, resource by resource.",
            ),
            m(
                ModeId::DraftSop,
                "Turns how your best person does a job into a procedure anyone on the team can follow.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your operations for repeatability and names the bottleneck to clear first.",
            ),
        ],
    },
    Coach {
        id: CoachId::Violet,
        name: "Violet",
        domain: "Service & retention",
        tagline: "Keeps the customers you win and gets them to value fast.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Checks whether churn is quietly cancelling out the growth you buy.",
            ),
            m(
                ModeId::RescueChurn,
                "Splits churn into what you can prevent and what to accept, with a save play per segment.",
            ),
            m(
                ModeId::PlanOnboarding,
                "Designs the first fourteen days so every new customer reaches first value on a set day.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your customer service and retention and names the fix that keeps the most revenue.",
            ),
        ],
    },
    Coach {
        id: CoachId::Fern,
        name: "Fern",
        domain: "Technology",
        tagline: "Decides what to build, buy, automate or delete.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Finds whether tools, data or manual work are what slow growth down.",
            ),
            m(
                ModeId::DecideStack,
                "Writes a build, buy, keep or delete decision record for one capability.",
            ),
            m(
                ModeId::MapAutomation,
                "Ranks the repetitive work worth automating and says which to keep manual.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your technology and data setup and names the gap that costs the most hours.",
            ),
        ],
    },
    Coach {
        id: CoachId::Willow,
        name: "Willow",
        domain: "People & culture",
        tagline: "Puts one owner on every outcome, and the right person (or agent) in every seat.",
        modes: &[
            m(
                ModeId::DiagnoseGrowth,
                "Checks whether ownership, hiring or founder bandwidth is what holds growth back.",
            ),
            m(
                ModeId::ScopeRole,
                "Defines a role by its outcomes and rules on hiring, an agent, or leaving it unfilled.",
            ),
            m(
                ModeId::MapAccountability,
                "Maps every outcome to one owner and surfaces the ones shared, orphaned or overloaded.",
            ),
            m(
                ModeId::AuditFunction,
                "Scores your people practices and names the change that frees the most leadership time.",
            ),
        ],
    },
];

const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            coach_index(TABLE[i].id) == i,
            "COACHES must list the coaches in CoachId order"
        );
        i += 1;
    }
};
