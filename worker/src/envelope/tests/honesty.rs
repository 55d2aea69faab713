//! Issue 9, item 1: arithmetic is evaluated and figures in prose trace to the caller, on whole
//! envelopes run through `check` exactly as delivered.

use super::rules::{after, at, flags};
use super::*;
use crate::envelope::check;

fn first_message(v: &[Violation]) -> &str {
    v.first().map_or("", |v| v.message.as_str())
}

#[test]
fn a_basis_whose_result_is_wrong_is_refused_and_the_right_one_passes() {
    // The case: 30 leads at a 20% close rate is 6 new clients, not 9.
    let request = typed(
        json!({"mode": "diagnose_growth", "messages": [{"role": "user",
        "content": "We make $42,000 a month, get 30 leads a month and close 20%."}]}),
    );
    let m = mode("diagnose_growth");
    let mut s = sample("diagnose_growth");
    s["numbers"] = json!([{"label": "New clients", "value": "9",
        "basis": "30 leads × 20% close rate = 9"}]);
    s["reply"] = json!("Your constraint is retention.");
    s["caveats"] = json!([]);
    s["thinking"]["diagnosis"] = json!("Clients leave as fast as they are won.");
    s["deliverable"]["evidence"] = json!([]);
    s["deliverable"]["ranked_levers"][0]["why"] = json!("Keeping clients is cheaper.");
    s["deliverable"]["do_not_do"] = json!([]);
    let v = check(m, &request, &s);
    assert_eq!(paths(&v), vec!["/numbers/0/basis"], "{v:?}");
    assert_eq!(first_message(&v), "9 is not what the calculation gives (6)");
    s["numbers"][0]["value"] = json!("6");
    s["numbers"][0]["basis"] = json!("30 leads × 20% close rate = 6");
    assert_eq!(check(m, &request, &s), vec![]);
}

#[test]
fn wrong_sums_ratios_and_rounding_are_refused_in_every_mode_that_shows_them() {
    // The value still shows $690, so it is not the (wrong) result of basis either.
    flags(
        "design_offer",
        &["/numbers/1/basis", "/numbers/1/value"],
        |s| {
            *at(s, "/numbers/1/basis") = json!("6 sessions × $95 + $120 gait analysis = $650");
        },
    );
    flags(
        "rescue_churn",
        &["/numbers/2/basis", "/numbers/2/value"],
        |s| {
            *at(s, "/numbers/2/basis") = json!("21 early cancellations / 50 cancellations = 48%");
        },
    );
    // 4,500 / 42,000 is 10.7%: 10.2% is not a rounding of it.
    flags(
        "diagnose_growth",
        &["/numbers/2/basis", "/numbers/2/value"],
        |s| {
            *at(s, "/numbers/2/basis") = json!("$4,500 / $42,000 monthly revenue = 10.2%");
        },
    );
    flags("diagnose_growth", &["/numbers/0/basis"], |s| {
        *at(s, "/numbers/0/basis") = json!("20 leads × 45% close rate\n= 9 new clients");
    });
}

#[test]
fn an_invented_benchmark_in_the_reply_is_refused() {
    let v = after("diagnose_growth", |s| {
        let reply = s["reply"].as_str().unwrap().to_owned();
        s["reply"] = json!(format!(
            "{reply} Firms like yours usually close 47% of leads."
        ));
    });
    assert_eq!(paths(&v), vec!["/reply"]);
    assert!(first_message(&v).starts_with("47% is not a figure the caller gave"));
}

#[test]
fn invented_figures_in_caveats_diagnosis_and_deliverable_text_are_refused() {
    flags("diagnose_growth", &["/caveats/0"], |s| {
        *at(s, "/caveats/0") = json!("Most bookkeeping firms lose 3.5% of clients a month.");
    });
    flags("diagnose_growth", &["/thinking/diagnosis"], |s| {
        *at(s, "/thinking/diagnosis") = json!("Churn of 12% a month outruns a 45% close rate.");
    });
    flags("diagnose_growth", &["/deliverable/evidence/0"], |s| {
        *at(s, "/deliverable/evidence/0") = json!("The typical firm keeps clients 38 months.");
    });
    flags(
        "write_outbound_sequence",
        &["/deliverable/emails/0/body"],
        |s| {
            let body = s["deliverable"]["emails"][0]["body"]
                .as_str()
                .unwrap()
                .to_owned();
            *at(s, "/deliverable/emails/0/body") =
                json!(format!("{body} Clients cut emergency calls by 63%."));
        },
    );
    // A fact field takes no proposal words either: "under" does not excuse a forecast.
    flags("rewrite_pricing", &["/deliverable/expected_effect"], |s| {
        *at(s, "/deliverable/expected_effect") = json!("Churn should stay under 4% a month.");
    });
}

#[test]
fn proposals_stated_constants_and_rounded_results_pass_in_prose() {
    flags("diagnose_growth", &[], |s| {
        let reply = s["reply"].as_str().unwrap().to_owned();
        s["reply"] = json!(format!(
            "{reply} Aim for under 5% monthly churn within 90 days, review it every 2 weeks at 9am, \
             and expect about $4.5k a month back."
        ));
    });
    // A proposal field may carry the coach's own figures.
    flags("design_offer", &[], |s| {
        *at(s, "/deliverable/bonuses/0") = json!("A 45-minute strength session in week 3");
    });
}

#[test]
fn sourced_texts_hold_the_callers_figures_derived_ones_or_unknown() {
    flags("decide_stack", &["/deliverable/options/1/cost"], |s| {
        *at(s, "/deliverable/options/1/cost") = json!("$22,000 upfront");
    });
    flags("decide_stack", &["/deliverable/options/0/cost"], |s| {
        *at(s, "/deliverable/options/0/source") = json!("caller_supplied");
    });
    flags(
        "map_automation",
        &["/deliverable/candidates/3/time_per_run"],
        |s| {
            *at(s, "/deliverable/candidates/3/time_per_run") = json!("6 hours");
        },
    );
    // Unknown time cannot be called the caller's, nor yield hours saved.
    flags(
        "map_automation",
        &[
            "/deliverable/candidates/0/time_per_run",
            "/deliverable/candidates/0/hours_saved",
        ],
        |s| *at(s, "/deliverable/candidates/0/time_per_run") = json!("unknown"),
    );
    flags(
        "plan_capacity",
        &["/deliverable/growth_target/statement"],
        |s| {
            *at(s, "/deliverable/growth_target/statement") = json!("$150,000 a month");
        },
    );
    flags("rescue_churn", &[], |s| {
        *at(s, "/deliverable/churn_segments/0/share") = json!("42% (21 of 50)");
    });
}
