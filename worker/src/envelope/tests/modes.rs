//! Issue 9, item 2: the cross-field rules of each mode prompt and of the reply, each broken once
//! in an otherwise valid sample and reported at its path.

use super::rules::{at, flags};
use super::*;

#[test]
fn the_reply_starts_with_the_answer_in_plain_prose_near_its_word_target() {
    let with = |prefix: &str| {
        let p = prefix.to_owned();
        move |s: &mut Value| {
            let reply = s["reply"].as_str().unwrap().to_owned();
            s["reply"] = json!(format!("{p}{reply}"));
        }
    };
    flags("diagnose_growth", &["/reply"], with("Great question! "));
    flags("diagnose_growth", &["/reply"], with("## Diagnosis\n"));
    flags("diagnose_growth", &["/reply"], with("- Retention first.\n"));
    flags("diagnose_growth", &["/reply"], with("I think "));
    // 150 words is the short tier's target; the bound is 165.
    flags("diagnose_growth", &["/reply"], |s| {
        s["reply"] = json!("Keep clients. ".repeat(83))
    });
    flags("diagnose_growth", &[], |s| {
        s["reply"] = json!("Keep clients. ".repeat(82))
    });
}

#[test]
fn the_diagnosis_names_the_binding_constraint() {
    flags("diagnose_growth", &["/thinking/diagnosis"], |s| {
        *at(s, "/deliverable/binding_constraint") = json!("pricing");
    });
    flags(
        "diagnose_growth",
        &["/deliverable/ranked_levers/2/lever"],
        |s| {
            *at(s, "/deliverable/ranked_levers/2/lever") =
                json!("Set a higher minimum fee for new clients");
        },
    );
}

#[test]
fn offers_promise_a_time_frame_at_a_real_price() {
    flags("design_offer", &["/deliverable/promise"], |s| {
        *at(s, "/deliverable/promise") = json!("Run pain-free again.");
    });
    flags("design_offer", &["/deliverable/price_point_usd"], |s| {
        *at(s, "/deliverable/price_point_usd") = json!(0);
    });
}

#[test]
fn tiers_run_cheapest_first_with_names_that_are_not_metals() {
    flags(
        "rewrite_pricing",
        &["/deliverable/recommended_tiers/2/price_usd"],
        |s| {
            *at(s, "/deliverable/recommended_tiers/2/price_usd") = json!(300);
        },
    );
    flags(
        "rewrite_pricing",
        &["/deliverable/recommended_tiers/0/name"],
        |s| {
            *at(s, "/deliverable/recommended_tiers/0/name") = json!("Silver");
        },
    );
}

#[test]
fn funnel_rates_trace_and_the_biggest_leak_is_a_stage_fixed_before_traffic() {
    flags(
        "funnel_review",
        &["/deliverable/stages/1/estimated_conversion_pct"],
        |s| {
            *at(s, "/deliverable/stages/1/estimated_conversion_pct") = json!(45);
        },
    );
    flags("funnel_review", &["/deliverable/biggest_leak"], |s| {
        *at(s, "/deliverable/biggest_leak") = json!("Pricing confusion everywhere.");
    });
    flags("funnel_review", &["/thinking/lever"], |s| {
        *at(s, "/thinking/lever") = json!("Buy more ads to drive traffic to the demo page");
    });
}

#[test]
fn audit_statuses_agree_with_scores_and_the_priority_is_a_finding() {
    flags("audit_function", &["/deliverable/findings/3/status"], |s| {
        *at(s, "/deliverable/findings/3/score") = json!(90);
    });
    flags("audit_function", &["/deliverable/findings/0/status"], |s| {
        *at(s, "/deliverable/findings/0/status") = json!("weak");
    });
    flags("audit_function", &["/deliverable/top_priority"], |s| {
        *at(s, "/deliverable/top_priority") = json!("Redesign the logo.");
    });
}

#[test]
fn the_costliest_objection_comes_first_and_scripts_are_speakable() {
    flags(
        "handle_objections",
        &["/deliverable/most_expensive_objection"],
        |s| {
            *at(s, "/deliverable/most_expensive_objection") =
                json!("Send me something and I'll think about it.");
        },
    );
    flags(
        "handle_objections",
        &["/deliverable/objections/1/response_script"],
        |s| {
            *at(s, "/deliverable/objections/1/response_script") =
                json!("Makes sense. [Pause] When does it end?");
        },
    );
    flags(
        "handle_objections",
        &["/deliverable/objections/2/concession_allowed"],
        |s| {
            *at(s, "/deliverable/objections/2/concession_allowed") = json!("");
        },
    );
}

#[test]
fn caller_stated_attributes_are_things_the_caller_said() {
    flags(
        "position_against_alternatives",
        &["/deliverable/unique_attributes/0/proof"],
        |s| {
            *at(s, "/deliverable/unique_attributes/0/attribute") =
                json!("Award-winning fragrance design");
        },
    );
}
