//! Issue 9, item 2, continued: the rules of the operations, customer and people modes.

use super::rules::{at, flags};
use super::*;

#[test]
fn capacity_verdicts_agree_with_their_constraints_and_target() {
    flags("plan_capacity", &["/deliverable/verdict"], |s| {
        *at(s, "/deliverable/verdict") = json!("absorbs_growth");
    });
    flags(
        "plan_capacity",
        &["/deliverable/constraints/0/status"],
        |s| {
            *at(s, "/deliverable/constraints/0/capacity") = json!("unknown");
            *at(s, "/deliverable/constraints/0/demand_at_target") = json!("unknown");
            *at(s, "/deliverable/constraints/0/source") = json!("not_provided");
        },
    );
    flags(
        "plan_capacity",
        &["/deliverable/growth_target/source"],
        |s| {
            *at(s, "/deliverable/growth_target") =
                json!({"statement": "unknown", "source": "not_provided"});
        },
    );
    flags("plan_capacity", &["/deliverable/bottleneck"], |s| {
        *at(s, "/deliverable/bottleneck") = json!("Marketing budget.");
    });
}

#[test]
fn sop_actions_start_with_a_verb_and_legal_rules_carry_a_caveat() {
    flags("draft_sop", &["/deliverable/steps/0/action"], |s| {
        *at(s, "/deliverable/steps/0/action") = json!("The tenant gets move-out instructions.");
    });
    flags("draft_sop", &["/deliverable/purpose"], |s| {
        s["caveats"] = json!([]);
    });
}

#[test]
fn churn_shares_are_parts_of_one_whole_and_revenue_at_stake_traces() {
    flags("rescue_churn", &["/deliverable/churn_segments"], |s| {
        *at(s, "/deliverable/churn_segments/3/share") = json!("unknown");
        *at(s, "/deliverable/churn_segments/3/source") = json!("not_provided");
        *at(s, "/deliverable/churn_segments/0/share") = json!("84% (42 of 50)");
        *at(s, "/deliverable/churn_segments/0/source") = json!("derived_from_caller_inputs");
    });
    flags(
        "rescue_churn",
        &["/deliverable/churn_segments/1/monthly_revenue_at_stake"],
        |s| {
            *at(s, "/deliverable/churn_segments/1/monthly_revenue_at_stake") =
                json!("$640 a month");
        },
    );
}

#[test]
fn the_first_value_event_is_a_milestone_by_its_day() {
    flags(
        "plan_onboarding",
        &["/deliverable/first_value/target_day"],
        |s| {
            *at(s, "/deliverable/first_value/event") =
                json!("The client sees a booked job from an ad.");
        },
    );
}

#[test]
fn build_only_what_differentiates_and_switching_cost_follows_its_source() {
    flags("decide_stack", &["/deliverable/decision/choice"], |s| {
        *at(s, "/deliverable/decision/choice") = json!("build");
    });
    flags(
        "decide_stack",
        &["/deliverable/switching_cost/estimate"],
        |s| {
            *at(s, "/deliverable/switching_cost/estimate") = json!("About $2,000 of setup");
        },
    );
}

#[test]
fn automation_is_listed_by_rank_stable_first_and_hours_saved_trace() {
    flags(
        "map_automation",
        &["/deliverable/candidates/0/stability"],
        |s| {
            *at(s, "/deliverable/candidates/0/stability") = json!("changing");
        },
    );
    flags(
        "map_automation",
        &["/deliverable/candidates/0/hours_saved"],
        |s| {
            *at(s, "/deliverable/candidates/0/hours_saved") = json!("9 hours a week");
        },
    );
    flags(
        "map_automation",
        &["/deliverable/candidates/3/hours_saved"],
        |s| {
            *at(s, "/deliverable/candidates/3/hours_saved") = json!("6.7 hours a week");
        },
    );
}

#[test]
fn role_rulings_follow_the_work_mix_and_agents_get_a_brief() {
    flags("scope_role", &["/deliverable/ruling"], |s| {
        *at(s, "/deliverable/ruling") = json!("agent");
    });
    flags("scope_role", &["/deliverable/ruling"], |s| {
        *at(s, "/deliverable/ruling") = json!("do_not_fill");
    });
    flags(
        "scope_role",
        &[
            "/deliverable/agent_brief/goal",
            "/deliverable/agent_brief/tasks",
            "/deliverable/agent_brief/guardrails",
        ],
        |s| {
            for w in s["deliverable"]["work_mix"].as_array_mut().unwrap() {
                w["best_done_by"] = json!("ai_agent");
            }
            *at(s, "/deliverable/ruling") = json!("agent");
            *at(s, "/deliverable/agent_brief") = json!({"goal": "", "tasks": [], "tools_and_data": [], "guardrails": [], "human_review": ""});
        },
    );
    let brief = [
        "goal",
        "tasks",
        "tools_and_data",
        "guardrails",
        "human_review",
    ]
    .map(|k| format!("/deliverable/agent_brief/{k}"));
    let brief: Vec<&str> = brief.iter().map(String::as_str).collect();
    flags("scope_role", &brief, |s| {
        *at(s, "/deliverable/work_mix/2/best_done_by") = json!("existing_team");
    });
}

#[test]
fn accountability_owners_are_not_contributors_and_orphans_have_conflicts() {
    flags(
        "map_accountability",
        &["/deliverable/outcomes/0/contributors/0"],
        |s| {
            *at(s, "/deliverable/outcomes/0/contributors/0") = json!("Practice manager");
        },
    );
    flags(
        "map_accountability",
        &["/deliverable/outcomes/1/status"],
        |s| {
            s["deliverable"]["conflicts"]
                .as_array_mut()
                .unwrap()
                .remove(2);
        },
    );
    flags(
        "map_accountability",
        &["/deliverable/outcomes/4/status"],
        |s| {
            *at(s, "/deliverable/overloaded") = json!([]);
        },
    );
}

#[test]
fn outbound_bodies_are_short_plain_text() {
    flags(
        "write_outbound_sequence",
        &["/deliverable/emails/0/body"],
        |s| {
            *at(s, "/deliverable/emails/0/body") =
                json!("Hi {{first_name}}, **quick** note about {{company}} in {{city}}.");
        },
    );
    flags(
        "write_outbound_sequence",
        &["/deliverable/emails/0/body"],
        |s| {
            let long =
                "Hi {{first_name}} at {{company}} in {{city}}, ".to_owned() + &"word ".repeat(150);
            *at(s, "/deliverable/emails/0/body") = json!(long);
        },
    );
}
