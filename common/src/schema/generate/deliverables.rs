//! Each mode's deliverable: the seven of spec 2.6 here, the nine of CONTRACT 8 (no nulls) in
//! `deliverables_contract.rs`. Cross-field rules a schema cannot state are enforced by the
//! worker (`envelope/modes.rs`) and only described here.

use super::deliverables_contract as contract;
use super::node::{Node, int, list, non_negative, obj, one_of, pct, s, string_or_null, up_to};
use crate::catalog::ModeId;
use serde_json::{Value, json};

/// The deliverable object of `mode`, without its description.
pub fn of(mode: ModeId) -> Value {
    match mode {
        ModeId::DiagnoseGrowth => diagnose_growth(),
        ModeId::DesignOffer => design_offer(),
        ModeId::RewritePricing => rewrite_pricing(),
        ModeId::FunnelReview => funnel_review(),
        ModeId::WriteOutboundSequence => write_outbound_sequence(),
        ModeId::AuditFunction => audit_function(),
        ModeId::HandleObjections => handle_objections(),
        ModeId::PositionAgainstAlternatives => contract::position_against_alternatives(),
        ModeId::PlanCapacity => contract::plan_capacity(),
        ModeId::DraftSop => contract::draft_sop(),
        ModeId::RescueChurn => contract::rescue_churn(),
        ModeId::PlanOnboarding => contract::plan_onboarding(),
        ModeId::DecideStack => contract::decide_stack(),
        ModeId::MapAutomation => contract::map_automation(),
        ModeId::ScopeRole => contract::scope_role(),
        ModeId::MapAccountability => contract::map_accountability(),
    }
}

fn diagnose_growth() -> Value {
    obj(json!({
        "binding_constraint": one_of(&["demand", "conversion", "retention", "pricing", "delivery"])
            .d("The one discipline that binds growth."),
        "evidence": up_to(s(), 4),
        "ranked_levers": list(obj(json!({
            "lever": s(),
            "why": s(),
            "expected_impact": one_of(&["small", "moderate", "large"]),
        })), 1, 3)
        .d("Ranked; the first item is the recommendation."),
        "do_not_do": up_to(s(), 3),
    }))
}

fn design_offer() -> Value {
    obj(json!({
        "offer_name": s(),
        "promise": s().d("Outcome with a time frame."),
        "price_point_usd": non_negative(),
        "price_rationale": s(),
        "guarantee": s(),
        "inclusions": list(s(), 1, 7),
        "bonuses": up_to(s(), 3),
        "why_it_converts": s(),
    }))
}

fn rewrite_pricing() -> Value {
    obj(json!({
        "current_read": s(),
        "recommended_tiers": list(obj(json!({
            "name": s(),
            "price_usd": non_negative(),
            "for_whom": s(),
            "includes": list(s(), 1, 6),
        })), 1, 4),
        "migration_note": s(),
        "expected_effect": s(),
    }))
}

fn funnel_review() -> Value {
    obj(json!({
        "stages": list(obj(json!({
            "stage": s(),
            "estimated_conversion_pct": json!({"type": ["number", "null"]}).d(
                "Estimated conversion of this stage in percent; null when unknown."
            ),
            "leak": s(),
            "fix": s(),
        })), 1, 6),
        "biggest_leak": s(),
        "quick_win": s(),
    }))
}

/// The only merge tokens an outbound sequence may use (spec 2.6).
pub const MERGE_TOKENS: [&str; 5] = [
    "{{first_name}}",
    "{{last_name}}",
    "{{company}}",
    "{{role}}",
    "{{city}}",
];

fn write_outbound_sequence() -> Value {
    let merge_fields = json!({
        "type": "array",
        "maxItems": MERGE_TOKENS.len(),
        "uniqueItems": true,
        "items": one_of(&MERGE_TOKENS),
    })
    .d(
        "Lists every merge token used anywhere in the sequence; only these five literal tokens \
        are permitted.",
    );
    obj(json!({
        "icp": s(),
        "channel": one_of(&["email", "linkedin", "cold_call"]),
        "merge_fields": merge_fields,
        "emails": list(obj(json!({
            "step": int().set("minimum", 1),
            "send_day": int().d("Days after step 1; step 1 is day 0.").set("minimum", 0),
            "subject": s(),
            "body": s().d(
                "Personalised only with the five permitted merge tokens, each declared in \
                 merge_fields; no invented bracket placeholders."
            ),
            "goal": s(),
        })), 1, 6),
        "follow_up_rule": s(),
        "personalization_inputs": up_to(s(), 4).d("Things findable in about two minutes."),
    }))
}

fn audit_function() -> Value {
    obj(json!({
        "discipline": s(),
        "overall_score": pct("Score 0-100."),
        "findings": list(obj(json!({
            "area": s(),
            "score": pct("Score 0-100."),
            "status": one_of(&["strong", "adequate", "weak", "critical"]),
            "evidence": s(),
            "fix": s(),
        })), 2, 7),
        "top_priority": s(),
        "quick_wins": up_to(s(), 3),
    }))
}

fn handle_objections() -> Value {
    obj(json!({
        "objections": list(obj(json!({
            "objection": s(),
            "what_they_really_mean": s(),
            "response_script": s().d("Speakable, under 60 words."),
            "evidence_to_bring": s(),
            "concession_allowed": string_or_null(),
        })), 3, 7)
        .d("Ordered by revenue cost, most expensive first."),
        "most_expensive_objection": s(),
        "pre_empt": s(),
        "disqualifiers": up_to(s(), 3),
    }))
}
