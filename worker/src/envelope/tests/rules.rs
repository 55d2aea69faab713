//! Each rule, broken once in an otherwise valid sample, is reported at the expected path.

use super::*;
use crate::envelope::check;

/// The violations of `mode_id`'s sample after `edit`.
pub fn after(mode_id: &str, edit: impl FnOnce(&mut Value)) -> Vec<Violation> {
    let mut s = sample(mode_id);
    edit(&mut s);
    check(mode(mode_id), &request(mode_id), &s)
}

/// `edit` breaks exactly the rules at `expected`, and nothing else.
pub fn flags(mode_id: &str, expected: &[&str], edit: impl FnOnce(&mut Value)) {
    let v = after(mode_id, edit);
    assert_eq!(paths(&v), expected, "{mode_id}: {v:?}");
}

pub fn at<'a>(v: &'a mut Value, pointer: &str) -> &'a mut Value {
    v.pointer_mut(pointer).unwrap()
}

#[test]
fn reply_length_counts_characters_not_bytes() {
    flags("diagnose_growth", &["/reply"], |s| {
        s["reply"] = json!("x".repeat(1401))
    });
    flags("diagnose_growth", &[], |s| {
        s["reply"] = json!("é".repeat(1400))
    });
}

#[test]
fn tier_caps_on_numbers_actions_and_caveats() {
    flags("diagnose_growth", &["/numbers"], |s| {
        let first = s["numbers"][0].clone();
        s["numbers"].as_array_mut().unwrap().push(first);
    });
    flags("diagnose_growth", &["/actions"], |s| {
        s["actions"] = json!([])
    });
    flags("diagnose_growth", &["/actions"], |s| {
        let first = s["actions"][0].clone();
        s["actions"].as_array_mut().unwrap().push(first);
    });
    flags("diagnose_growth", &["/caveats"], |s| {
        s["caveats"] = json!(["One.", "Two.", "Three."]);
    });
}

#[test]
fn each_caveat_is_one_sentence() {
    flags("diagnose_growth", &["/caveats/0"], |s| {
        s["caveats"][0] = json!("Churn may be seasonal. Check last year.");
    });
}

#[test]
fn first_ranked_lever_is_the_thinking_lever() {
    flags(
        "diagnose_growth",
        &["/deliverable/ranked_levers/0/lever"],
        |s| {
            *at(s, "/deliverable/ranked_levers/0/lever") = json!("Buy more ads");
        },
    );
}

#[test]
fn numbers_trace_to_the_caller() {
    // An invented operand, and (so) a result the calculation does not give.
    flags(
        "diagnose_growth",
        &["/numbers/0/basis", "/numbers/0/basis"],
        |s| {
            *at(s, "/numbers/0/basis") = json!("20 leads × 45% close rate × 1.15 = 9 new clients");
        },
    );
    flags("diagnose_growth", &["/numbers/1/value"], |s| {
        *at(s, "/numbers/1/value") = json!("$5,000");
    });
}

#[test]
fn outbound_merge_tokens_are_the_five_and_declared_both_ways() {
    let m = "write_outbound_sequence";
    flags(m, &["/deliverable/emails/0/body"], |s| {
        *at(s, "/deliverable/emails/0/body") =
            json!("Hi {{first_name}} at {{deal_size}} in {{city}} with {{company}}");
    });
    flags(m, &["/deliverable/emails/0/subject"], |s| {
        *at(s, "/deliverable/emails/0/subject") = json!("For {{role}} at {{company}}");
    });
    flags(m, &["/deliverable/merge_fields/3"], |s| {
        s["deliverable"]["merge_fields"]
            .as_array_mut()
            .unwrap()
            .push(json!("{{last_name}}"));
    });
    flags(m, &["/deliverable/emails/2/body"], |s| {
        *at(s, "/deliverable/emails/2/body") = json!("Hi [Name], {{first_name}} at {{company}}");
    });
}

#[test]
fn outbound_steps_count_from_one_and_days_never_go_back() {
    let m = "write_outbound_sequence";
    flags(m, &["/deliverable/emails/1/step"], |s| {
        *at(s, "/deliverable/emails/1/step") = json!(3);
    });
    flags(m, &["/deliverable/emails/0/send_day"], |s| {
        *at(s, "/deliverable/emails/0/send_day") = json!(1);
    });
    flags(m, &["/deliverable/emails/2/send_day"], |s| {
        *at(s, "/deliverable/emails/2/send_day") = json!(2);
    });
}

#[test]
fn objection_scripts_are_under_sixty_words() {
    flags(
        "handle_objections",
        &["/deliverable/objections/1/response_script"],
        |s| {
            *at(s, "/deliverable/objections/1/response_script") = json!("word ".repeat(60));
        },
    );
    flags("handle_objections", &[], |s| {
        *at(s, "/deliverable/objections/1/response_script") = json!("word ".repeat(59));
    });
}

#[test]
fn wedge_is_against_a_listed_alternative() {
    flags(
        "position_against_alternatives",
        &["/deliverable/wedge/against"],
        |s| {
            *at(s, "/deliverable/wedge/against") = json!("Etsy sellers");
        },
    );
}

#[test]
fn insufficient_capacity_data_means_low_confidence() {
    flags("plan_capacity", &["/thinking/confidence"], |s| {
        *at(s, "/deliverable/verdict") = json!("insufficient_data");
    });
    flags("plan_capacity", &[], |s| {
        *at(s, "/deliverable/verdict") = json!("insufficient_data");
        *at(s, "/thinking/confidence") = json!("low");
    });
}

#[test]
fn sop_steps_run_in_order_with_known_roles() {
    flags("draft_sop", &["/deliverable/steps/1/n"], |s| {
        *at(s, "/deliverable/steps/1/n") = json!(3);
    });
    flags("draft_sop", &["/deliverable/steps/0/role"], |s| {
        *at(s, "/deliverable/steps/0/role") = json!("Intern");
    });
    flags("draft_sop", &["/deliverable/owner_role"], |s| {
        *at(s, "/deliverable/owner_role") = json!("Owner");
    });
}

#[test]
fn churn_classes_follow_reasons_and_save_plays_target_preventable_segments() {
    let m = "rescue_churn";
    flags(
        m,
        &[
            "/deliverable/churn_segments/2/class",
            "/deliverable/save_plays/1/segment",
        ],
        |s| {
            *at(s, "/deliverable/churn_segments/2/class") = json!("accept");
        },
    );
    flags(m, &["/deliverable/churn_segments/3/class"], |s| {
        *at(s, "/deliverable/churn_segments/3/class") = json!("preventable");
    });
    flags(m, &["/deliverable/save_plays/0/segment"], |s| {
        *at(s, "/deliverable/save_plays/0/segment") = json!("Members who moved away");
    });
    flags(m, &["/deliverable/save_plays/0/segment"], |s| {
        *at(s, "/deliverable/save_plays/0/segment") = json!("Everyone");
    });
}

#[test]
fn onboarding_days_never_decrease_and_first_value_lands_in_two_weeks() {
    let m = "plan_onboarding";
    flags(m, &["/deliverable/milestones/2/day"], |s| {
        *at(s, "/deliverable/milestones/2/day") = json!(0);
        *at(s, "/deliverable/milestones/1/day") = json!(3);
    });
    flags(m, &["/deliverable/touchpoints/5/day"], |s| {
        *at(s, "/deliverable/touchpoints/5/day") = json!(0);
    });
    flags(m, &["/deliverable/first_value/target_day"], |s| {
        *at(s, "/deliverable/first_value/target_day") = json!(15);
    });
}

#[test]
fn stack_decision_is_a_listed_option_proposed_and_deletes_what_is_not_needed() {
    let m = "decide_stack";
    flags(m, &["/deliverable/decision/choice"], |s| {
        *at(s, "/deliverable/decision/choice") = json!("partner");
    });
    flags(m, &["/deliverable/decision/choice"], |s| {
        *at(s, "/deliverable/capability_class") = json!("not_needed");
    });
    flags(m, &["/deliverable/status"], |s| {
        *at(s, "/deliverable/status") = json!("accepted");
    });
}

#[test]
fn automation_ranks_are_unique_and_the_pilot_is_rank_one() {
    let m = "map_automation";
    flags(m, &["/deliverable/candidates/1/rank"], |s| {
        *at(s, "/deliverable/candidates/1/rank") = json!(1);
    });
    flags(m, &["/deliverable/candidates/1/rank"], |s| {
        *at(s, "/deliverable/candidates/1/rank") = json!(9);
    });
    flags(m, &["/deliverable/first_pilot/task"], |s| {
        *at(s, "/deliverable/first_pilot/task") = json!("Quote preparation");
    });
    flags(m, &["/deliverable/candidates/0/approach"], |s| {
        *at(s, "/deliverable/candidates/0/logic") = json!("judgment");
    });
}

#[test]
fn every_outcome_has_one_owner() {
    for owner in [
        "Practice manager and owner",
        "Ops/Finance",
        "Owner & manager",
    ] {
        flags(
            "map_accountability",
            &["/deliverable/outcomes/0/owner"],
            |s| {
                *at(s, "/deliverable/outcomes/0/owner") = json!(owner);
            },
        );
    }
    for one in ["Brand manager", "Head of R&D", "P&L owner"] {
        flags("map_accountability", &[], |s| {
            *at(s, "/deliverable/outcomes/0/owner") = json!(one);
        });
    }
}

/// The model controls every field: replacing any node of any sample with a value of the wrong
/// type must never panic `check` or `assemble`.
#[test]
fn mistyped_fields_anywhere_never_panic() {
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m
                .iter()
                .for_each(|(k, v)| pointers(v, format!("{at}/{k}"), out)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, v)| pointers(v, format!("{at}/{i}"), out)),
            _ => {}
        }
        out.push(at);
    }
    for m in all_modes() {
        let s = sample(m.id);
        let req = request(m.id);
        let mut all = Vec::new();
        pointers(&s, String::new(), &mut all);
        for p in all {
            for junk in [
                Value::Null,
                json!(-7),
                json!("x"),
                json!([{}]),
                json!({"a": 1}),
            ] {
                let mut broken = s.clone();
                if p.is_empty() {
                    broken = junk.clone();
                } else {
                    *broken.pointer_mut(&p).unwrap() = junk.clone();
                }
                check(m, &req, &broken);
                crate::envelope::assemble(CoachId::Mary, m, &req, broken, (1, 2), json!({}));
            }
        }
    }
}
