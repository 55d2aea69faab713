//! The nine deliverables of CONTRACT 8: bounded strings, closed enums, no nulls. The rules that
//! tie fields together (an `against` that names an alternative, ranks that run 1..k, ...) are
//! the worker's (`envelope/modes/`); the descriptions state them for the caller. Beyond
//! CONTRACT 8, five deliverables carry what their mode promises (issue 9): the capacity plan's
//! growth target and when delivery runs out, the revenue at stake per churn segment, the hours
//! each automation saves, the switching cost of a stack decision, and an agent brief when a role
//! is ruled an agent's.

use super::node::{Node, constant, int_range, list, obj, one_of, sm, source};
use serde_json::{Value, json};

pub fn position_against_alternatives() -> Value {
    obj(json!({
        "alternatives": list(obj(json!({
            "name": sm(80),
            "kind": one_of(&["direct_competitor", "diy_or_spreadsheet", "status_quo",
                             "hire_or_agency", "adjacent_product"]),
            "why_chosen_today": sm(200),
            "where_it_falls_short": sm(200),
        })), 1, 4),
        "unique_attributes": list(obj(json!({
            "attribute": sm(120),
            "value_to_customer": sm(200),
            "proof": one_of(&["caller_stated", "observable", "needs_evidence"]),
        })), 1, 4),
        "best_fit_customer": sm(200),
        "wedge": obj(json!({
            "statement": sm(280),
            "against": sm(80).d("One of alternatives[].name."),
            "market_frame": sm(120),
            "why_it_wins": sm(240),
        })),
        "claims_to_avoid": list(sm(160), 0, 3),
        "proof_to_collect": list(sm(160), 0, 3),
    }))
}

pub fn plan_capacity() -> Value {
    obj(json!({
        "verdict": one_of(&["absorbs_growth", "absorbs_with_changes", "cannot_absorb",
                            "insufficient_data"])
            .d("insufficient_data requires thinking.confidence low."),
        "planning_period": one_of(&["week", "month", "quarter"]),
        "constraints": list(obj(json!({
            "resource": sm(80),
            "capacity": sm(80),
            "demand_at_target": sm(80),
            "status": one_of(&["headroom", "at_limit", "over_limit", "unknown"]),
            "source": source(),
        })), 1, 4),
        "bottleneck": sm(160),
        "levers": list(obj(json!({
            "lever": one_of(&["hire", "subcontract", "automate", "reprice", "productize",
                              "throttle_sales", "reschedule", "cut_scope"]),
            "effect": sm(160),
            "lead_time": one_of(&["days", "weeks", "months"]),
        })), 1, 4),
        "add_capacity_trigger": sm(200),
        "assumptions": list(sm(160), 0, 3),
        "growth_target": obj(json!({
            "statement": sm(160).d("The growth the plan must absorb, with its figures, or \"unknown\"."),
            "source": source(),
        })),
        "capacity_runs_out": sm(200).d(
            "When delivery runs out: the volume or date at which the bottleneck hits its limit, \
             or \"unknown\"."
        ),
    }))
}

pub fn draft_sop() -> Value {
    obj(json!({
        "title": sm(100),
        "purpose": sm(240),
        "scope": obj(json!({"applies_to": sm(200), "excludes": sm(200)})),
        "trigger": sm(160),
        "roles": list(obj(json!({"role": sm(60), "responsibility": sm(160)})), 1, 5),
        "prerequisites": list(sm(120), 0, 5),
        "steps": list(obj(json!({
            "n": int_range(1, 15).d("Step number; n runs 1..k in order."),
            "role": sm(60).d("One of roles[].role."),
            "action": sm(200),
            "output_or_check": sm(160),
            "decision": sm(160).d("Empty string when the step has no decision."),
        })), 3, 15),
        "quality_checks": list(sm(160), 1, 4),
        "exceptions": list(obj(json!({"condition": sm(120), "response": sm(160)})), 0, 4),
        "records": list(sm(120), 0, 3),
        "owner_role": sm(60).d("One of roles[].role."),
        "review_cadence": one_of(&["monthly", "quarterly", "semiannual", "annual", "on_change"]),
    }))
}

pub fn rescue_churn() -> Value {
    obj(json!({
        "churn_segments": list(obj(json!({
            "segment": sm(120),
            "reason": one_of(&["onboarding_failure", "value_not_realized", "service_failure",
                               "price_value_mismatch", "competitor_switch", "payment_failure",
                               "business_closed", "poor_fit", "need_ended"])
                .d("payment_failure requires class preventable; business_closed and need_ended \
                    require class accept."),
            "class": one_of(&["preventable", "accept"]),
            "share": sm(40),
            "source": source(),
            "evidence": one_of(&["caller_data", "caller_anecdote", "inferred"]),
            "rationale": sm(200),
            "monthly_revenue_at_stake": sm(60).d(
                "Revenue this segment costs per month, from the caller's figures, or \"unknown\"."
            ),
        })), 1, 6),
        "save_plays": list(obj(json!({
            "segment": sm(120).d("A churn_segments[].segment whose class is preventable."),
            "play": sm(200),
            "timing": one_of(&["onboarding", "at_risk_signal", "pre_renewal", "cancel_request",
                               "win_back"]),
            "owner_role": sm(60),
        })), 1, 4),
        "accept_policy": sm(240),
        "early_warning": list(obj(json!({"signal": sm(120), "rule": sm(120)})), 1, 4),
        "exit_questions": list(sm(160), 1, 3),
    }))
}

pub fn plan_onboarding() -> Value {
    obj(json!({
        "first_value": obj(json!({
            "event": sm(200),
            "target_day": int_range(1, 14),
            "measured_by": sm(160),
        })),
        "handoff_inputs": list(sm(120), 1, 5),
        "milestones": list(obj(json!({
            "day": int_range(0, 14),
            "milestone": sm(120),
            "owner": one_of(&["provider", "customer", "both"]),
            "exit_criterion": sm(160),
        })), 3, 8)
        .d("In day order; days never decrease."),
        "touchpoints": list(obj(json!({
            "day": int_range(0, 14),
            "channel": one_of(&["call", "email", "in_app", "in_person", "video", "chat"]),
            "purpose": sm(120),
        })), 2, 8)
        .d("In day order; days never decrease."),
        "stall_signals": list(obj(json!({"signal": sm(120), "intervention": sm(160)})), 1, 4),
        "day14_exit": sm(200),
    }))
}

const STACK_OPTIONS: [&str; 5] = ["build", "buy", "delete", "keep", "partner"];

pub fn decide_stack() -> Value {
    obj(json!({
        "title": sm(100),
        "status": constant("proposed"),
        "context": sm(400),
        "capability_class": one_of(&["core_differentiator", "commodity", "not_needed"])
            .d("not_needed requires decision.choice delete."),
        "options": list(obj(json!({
            "option": one_of(&STACK_OPTIONS),
            "summary": sm(200),
            "cost": sm(80),
            "source": source(),
            "pros": list(sm(120), 1, 3),
            "cons": list(sm(120), 1, 3),
        })), 2, 4),
        "decision": obj(json!({
            "choice": one_of(&STACK_OPTIONS).d("One of options[].option."),
            "statement": sm(240),
        })),
        "consequences": obj(json!({
            "positive": list(sm(160), 1, 3),
            "negative": list(sm(160), 1, 3),
        })),
        "revisit_when": sm(200),
        "switching_cost": obj(json!({
            "estimate": sm(160).d("What moving to the choice costs (money, hours, migration), or \"unknown\"."),
            "source": source(),
        })),
    }))
}

pub fn map_automation() -> Value {
    obj(json!({
        "candidates": list(obj(json!({
            "rank": int_range(1, 8).d("Ranks run 1..k, unique."),
            "task": sm(120),
            "frequency": one_of(&["daily", "weekly", "monthly", "ad_hoc"]),
            "time_per_run": sm(40),
            "source": source(),
            "logic": one_of(&["rule_based", "mixed", "judgment"])
                .d("judgment excludes approach no_code and script_or_integration."),
            "input": one_of(&["structured", "semi_structured", "unstructured"]),
            "stability": one_of(&["stable", "changing"]),
            "approach": one_of(&["no_code", "script_or_integration", "ai_assist_with_review",
                                 "ai_agent", "keep_manual", "fix_process_first"]),
            "risk_if_wrong": one_of(&["low", "medium", "high"]),
            "rationale": sm(200),
            "hours_saved": sm(60).d(
                "Hours a week or month this saves, from the caller's figures, or \"unknown\"."
            ),
        })), 1, 8),
        "do_not_automate": list(obj(json!({"task": sm(120), "reason": sm(160)})), 0, 3),
        "first_pilot": obj(json!({
            "task": sm(120).d("The rank-1 candidate's task."),
            "success_metric": sm(160),
            "review_after": one_of(&["1_week", "2_weeks", "1_month"]),
        })),
    }))
}

pub fn scope_role() -> Value {
    obj(json!({
        "role_title": sm(80),
        "mission": sm(240),
        "reports_to": sm(80),
        "outcomes": list(obj(json!({
            "outcome": sm(160),
            "measure": sm(120),
            "by": one_of(&["30_days", "90_days", "6_months", "12_months"]),
        })), 2, 5),
        "responsibilities": list(sm(120), 3, 6),
        "competencies": list(sm(80), 2, 6),
        "work_mix": list(obj(json!({
            "work": sm(100),
            "share": sm(20),
            "source": source(),
            "best_done_by": one_of(&["new_hire", "ai_agent", "contractor", "existing_team",
                                     "eliminate"]),
        })), 2, 6),
        "ruling": one_of(&["hire_full_time", "hire_part_time", "contract", "agent",
                           "agent_with_owner_review", "do_not_fill"]),
        "ruling_rationale": sm(300),
        "revisit_when": sm(200),
        "agent_brief": obj(json!({
            "goal": sm(200),
            "tasks": list(sm(120), 0, 5),
            "tools_and_data": list(sm(120), 0, 4),
            "guardrails": list(sm(160), 0, 4),
            "human_review": sm(160),
        }))
        .d(
            "Filled when the ruling is agent or agent_with_owner_review (goal, tasks and \
             guardrails required; human_review required for agent_with_owner_review); empty \
             strings and lists otherwise."
        ),
    }))
}

pub fn map_accountability() -> Value {
    obj(json!({
        "outcomes": list(obj(json!({
            "outcome": sm(120),
            "metric": sm(100),
            "owner": sm(60).d("Exactly one owner: no \"and\", \"/\" or \"&\"."),
            "contributors": list(sm(60), 0, 4),
            "cadence": one_of(&["weekly", "monthly", "quarterly"]),
            "status": one_of(&["clear", "shared_needs_single_owner", "orphaned",
                               "owner_overloaded"]),
        })), 3, 10),
        "seats": list(obj(json!({
            "seat": sm(60),
            "holder": sm(60),
            "responsibilities": list(sm(120), 3, 5),
        })), 1, 8),
        "conflicts": list(obj(json!({
            "outcome": sm(120),
            "issue": sm(160),
            "resolution": sm(160),
        })), 0, 4),
        "overloaded": list(sm(60), 0, 3),
    }))
}
