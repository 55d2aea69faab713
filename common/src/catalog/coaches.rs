//! The seven coaches (spec 2.1), each with its own summary of every mode it offers.

use super::{Coach, CoachMode};

const fn m(mode: &'static str, summary: &'static str) -> CoachMode {
    CoachMode { mode, summary }
}

pub static COACHES: [Coach; 7] = [
    Coach {
        id: "mary",
        name: "Mary",
        domain: "Growth strategy",
        tagline: "Finds the one constraint holding growth back, and the lever that moves it.",
        modes: &[
            m(
                "diagnose_growth",
                "Names the single constraint on growth right now and ranks up to three levers against it.",
            ),
            m(
                "design_offer",
                "Shapes an offer around the outcome buyers already pay for, priced to the value of that outcome.",
            ),
            m(
                "rewrite_pricing",
                "Rebuilds your price list into tiers that pull buyers up rather than down.",
            ),
            m(
                "funnel_review",
                "Follows a buyer from first visit to paid and puts a number on the worst leak.",
            ),
            m(
                "write_outbound_sequence",
                "Writes a short outbound sequence aimed at the buyers most likely to say yes this quarter.",
            ),
            m(
                "audit_function",
                "Scores your growth engine end to end and says which weak spot to fix first.",
            ),
        ],
    },
    Coach {
        id: "reed",
        name: "Reed",
        domain: "Sales",
        tagline: "Turns conversations into closed deals: offers, pricing, objections and outbound.",
        modes: &[
            m(
                "diagnose_growth",
                "Finds where deals stall between first call and signature and what unblocks them.",
            ),
            m(
                "design_offer",
                "Packages what you sell so a buyer can say yes on the first call.",
            ),
            m(
                "rewrite_pricing",
                "Sets prices and tiers that survive a procurement conversation without discounting.",
            ),
            m(
                "handle_objections",
                "Scripts word-for-word answers to the objections that cost you the most revenue.",
            ),
            m(
                "write_outbound_sequence",
                "Writes a cold sequence that books meetings, with the follow-up rule your reps can run.",
            ),
            m(
                "audit_function",
                "Scores your sales process stage by stage and names the fix worth the most pipeline.",
            ),
        ],
    },
    Coach {
        id: "iris",
        name: "Iris",
        domain: "Marketing",
        tagline: "Gets the right buyers to raise their hand, and tells you why they would pick you.",
        modes: &[
            m(
                "diagnose_growth",
                "Finds whether demand, message or channel is what keeps buyers from raising their hand.",
            ),
            m(
                "funnel_review",
                "Audits traffic, landing page and lead capture to find where attention leaks away.",
            ),
            m(
                "design_offer",
                "Frames an offer whose promise can be stated in one line on an ad or a landing page.",
            ),
            m(
                "position_against_alternatives",
                "Finds the wedge that makes you the obvious pick over the competitor, the spreadsheet or doing nothing.",
            ),
            m(
                "write_outbound_sequence",
                "Writes a campaign-style sequence whose hook is the buyer's pain, not your features.",
            ),
            m(
                "audit_function",
                "Scores your marketing function and names the channel or message gap to close first.",
            ),
        ],
    },
    Coach {
        id: "oak",
        name: "Oak",
        domain: "Operations",
        tagline: "Makes delivery repeatable so that growth does not break it.",
        modes: &[
            m(
                "diagnose_growth",
                "Checks whether delivery, not demand, is what caps your growth.",
            ),
            m(
                "plan_capacity",
                "Models whether your team and tools can absorb the growth you plan, resource by resource.",
            ),
            m(
                "draft_sop",
                "Turns how your best person does a job into a procedure anyone on the team can follow.",
            ),
            m(
                "audit_function",
                "Scores your operations for repeatability and names the bottleneck to clear first.",
            ),
        ],
    },
    Coach {
        id: "violet",
        name: "Violet",
        domain: "Service & retention",
        tagline: "Keeps the customers you win and gets them to value fast.",
        modes: &[
            m(
                "diagnose_growth",
                "Checks whether churn is quietly cancelling out the growth you buy.",
            ),
            m(
                "rescue_churn",
                "Splits churn into what you can prevent and what to accept, with a save play per segment.",
            ),
            m(
                "plan_onboarding",
                "Designs the first fourteen days so every new customer reaches first value on a set day.",
            ),
            m(
                "audit_function",
                "Scores your customer service and retention and names the fix that keeps the most revenue.",
            ),
        ],
    },
    Coach {
        id: "fern",
        name: "Fern",
        domain: "Technology",
        tagline: "Decides what to build, buy, automate or delete.",
        modes: &[
            m(
                "diagnose_growth",
                "Finds whether tools, data or manual work are what slow growth down.",
            ),
            m(
                "decide_stack",
                "Writes a build, buy, keep or delete decision record for one capability.",
            ),
            m(
                "map_automation",
                "Ranks the repetitive work worth automating and says which to keep manual.",
            ),
            m(
                "audit_function",
                "Scores your technology and data setup and names the gap that costs the most hours.",
            ),
        ],
    },
    Coach {
        id: "willow",
        name: "Willow",
        domain: "People & culture",
        tagline: "Puts one owner on every outcome, and the right person (or agent) in every seat.",
        modes: &[
            m(
                "diagnose_growth",
                "Checks whether ownership, hiring or founder bandwidth is what holds growth back.",
            ),
            m(
                "scope_role",
                "Defines a role by its outcomes and rules on hiring, an agent, or leaving it unfilled.",
            ),
            m(
                "map_accountability",
                "Maps every outcome to one owner and surfaces the ones shared, orphaned or overloaded.",
            ),
            m(
                "audit_function",
                "Scores your people practices and names the change that frees the most leadership time.",
            ),
        ],
    },
];
