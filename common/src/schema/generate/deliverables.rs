//! Each mode's deliverable: the seven of spec 2.6 here, the nine of CONTRACT 8 (no nulls) in
//! `deliverables_contract.rs`. Cross-field rules a schema cannot state are enforced by the
//! worker (`envelope/modes/`) and only described here. Every free string is bounded: a
//! grammar-constrained model stops, and a client can size its storage. The bounds follow the
//! field's purpose (a name, a sentence, a short paragraph) inside the tier's reply cap.

use super::LEVER_MAX;
use super::deliverables_contract as contract;
use super::node::{Node, int, list, non_negative, obj, one_of, pct, sm, string_or_null, up_to};
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
        "evidence": up_to(sm(200), 4),
        "ranked_levers": list(obj(json!({
            "lever": sm(LEVER_MAX),
            "why": sm(240),
            "expected_impact": one_of(&["small", "moderate", "large"]),
        })), 1, 3)
        .d("Ranked; the first item is the recommendation."),
        "do_not_do": up_to(sm(160), 3),
    }))
}

fn design_offer() -> Value {
    obj(json!({
        "offer_name": sm(80),
        "promise": sm(200).d("Outcome with a time frame."),
        "price_point_usd": non_negative(),
        "price_rationale": sm(300),
        "guarantee": sm(300),
        "inclusions": list(sm(120), 1, 7),
        "bonuses": up_to(sm(160), 3),
        "why_it_converts": sm(300),
    }))
}

fn rewrite_pricing() -> Value {
    obj(json!({
        "current_read": sm(300),
        "recommended_tiers": list(obj(json!({
            "name": sm(40),
            "price_usd": non_negative(),
            "for_whom": sm(160),
            "includes": list(sm(120), 1, 6),
        })), 1, 4)
        .d("Cheapest first."),
        "migration_note": sm(400),
        "expected_effect": sm(300),
    }))
}

fn funnel_review() -> Value {
    obj(json!({
        "stages": list(obj(json!({
            "stage": sm(80),
            "estimated_conversion_pct": json!({"type": ["number", "null"]}).d(
                "Estimated conversion of this stage in percent; null when unknown."
            ),
            "leak": sm(240),
            "fix": sm(240),
        })), 1, 6),
        "biggest_leak": sm(240).d("Names the stage losing the most, and why."),
        "quick_win": sm(240),
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
        "icp": sm(300),
        "channel": one_of(&["email", "linkedin", "cold_call"]),
        "merge_fields": merge_fields,
        "emails": list(obj(json!({
            "step": int().set("minimum", 1),
            "send_day": int().d("Days after step 1; step 1 is day 0.").set("minimum", 0),
            "subject": sm(120),
            "body": sm(1200).d(
                "Personalised only with the five permitted merge tokens, each declared in \
                 merge_fields; no invented bracket placeholders."
            ),
            "goal": sm(160),
        })), 1, 6),
        "follow_up_rule": sm(300),
        "personalization_inputs": up_to(sm(120), 4).d("Things findable in about two minutes."),
    }))
}

fn audit_function() -> Value {
    obj(json!({
        "discipline": sm(80),
        "overall_score": pct("Score 0-100."),
        "findings": list(obj(json!({
            "area": sm(80),
            "score": pct("Score 0-100."),
            "status": one_of(&["strong", "adequate", "weak", "critical"])
                .d("Agrees with the score: critical 0-24, weak 25-49, adequate 50-74, strong 75-100."),
            "evidence": sm(300),
            "fix": sm(240),
        })), 2, 7),
        "top_priority": sm(240),
        "quick_wins": up_to(sm(160), 3),
    }))
}

fn handle_objections() -> Value {
    obj(json!({
        "objections": list(obj(json!({
            "objection": sm(160),
            "what_they_really_mean": sm(240),
            "response_script": sm(400).d("Speakable, under 60 words."),
            "evidence_to_bring": sm(240),
            "concession_allowed": string_or_null(160),
        })), 3, 7)
        .d("Ordered by revenue cost, most expensive first."),
        "most_expensive_objection": sm(160).d("The same text as the first objection."),
        "pre_empt": sm(300),
        "disqualifiers": up_to(sm(160), 3),
    }))
}
