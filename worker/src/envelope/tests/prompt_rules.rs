//! Three rules the mode prompts state, held in code: a critical audit finding holds
//! `overall_score` below 50 (audit_function), a suggested guarantee needs a caveat saying to
//! check it (design_offer), and objection scripts make no fake deadlines (handle_objections).
//! Each is broken once in a clean sample and caught; the clean sample passes.

use super::rules::{after, at, flags};
use super::*;
use crate::envelope::check;

/// The audit sample scored `score` overall, in the deliverable and in the reply.
fn scored(s: &mut Value, score: u32) {
    *at(s, "/deliverable/overall_score") = json!(score);
    let reply = s["reply"]
        .as_str()
        .unwrap()
        .replace("scores 47", &format!("scores {score}"));
    s["reply"] = json!(reply);
}

#[test]
fn a_critical_finding_holds_the_overall_score_below_50() {
    // The sample scores 47 with a critical finding (response speed, 20).
    assert_eq!(paths(&after("audit_function", |_| {})), Vec::<&str>::new());
    flags("audit_function", &["/deliverable/overall_score"], |s| {
        scored(s, 50);
    });
    flags("audit_function", &["/deliverable/overall_score"], |s| {
        scored(s, 72);
    });
    // Without a critical finding, 72 is the coach's judgment to make.
    flags("audit_function", &[], |s| {
        scored(s, 72);
        *at(s, "/deliverable/findings/0/score") = json!(30);
        *at(s, "/deliverable/findings/0/status") = json!("weak");
    });
}

#[test]
fn a_suggested_guarantee_needs_a_caveat_saying_to_check_it() {
    // The sample's caveat: "Check that a conditional free-treatment guarantee is allowed by your
    // insurers and professional body before you advertise it."
    assert_eq!(paths(&after("design_offer", |_| {})), Vec::<&str>::new());
    flags("design_offer", &["/deliverable/guarantee"], |s| {
        s["caveats"] = json!([]);
    });
    // A caveat about something else does not cover the guarantee.
    flags("design_offer", &["/deliverable/guarantee"], |s| {
        s["caveats"] =
            json!(["Runner numbers come from one season, so check them again in spring."]);
    });
    flags("design_offer", &[], |s| {
        s["caveats"] = json!(["Confirm with your insurer that you may offer free extra sessions."]);
    });
    // No guarantee suggested: nothing to check.
    flags("design_offer", &[], |s| {
        s["caveats"] = json!([]);
        *at(s, "/deliverable/guarantee") =
            json!("No guarantee: the clinic cannot promise recovery.");
    });
}

#[test]
fn the_callers_own_guarantee_restated_needs_no_caveat() {
    let mut s = sample("design_offer");
    s["caveats"] = json!([]);
    let guarantee = s["deliverable"]["guarantee"].clone();
    let mut body = request_json("design_offer");
    body["context"]["offer"]["guarantee"] = guarantee;
    let req = typed(body);
    assert_eq!(
        paths(&check(mode("design_offer"), &req, &s)),
        Vec::<&str>::new()
    );
}

#[test]
fn objection_scripts_make_no_fake_deadlines() {
    assert_eq!(
        paths(&after("handle_objections", |_| {})),
        Vec::<&str>::new()
    );
    let script = "/deliverable/objections/1/response_script";
    for urgency in [
        "Makes sense. This offer ends Friday, so shall we sign now?",
        "Makes sense. This is your last chance to lock in the onboarding waiver.",
        "Makes sense. The waiver is only until the end of the month, so let's start.",
        "Makes sense. Our price goes up next quarter, so now is cheaper.",
    ] {
        flags("handle_objections", &[script], |s| {
            *at(s, script) = json!(urgency);
        });
    }
    flags(
        "handle_objections",
        &["/deliverable/objections/0/concession_allowed"],
        |s| {
            *at(s, "/deliverable/objections/0/concession_allowed") =
                json!("Waive the onboarding fee, today only.");
        },
    );
    // Honest scripts talk about real dates: the prospect's contract ending, a filing deadline.
    flags("handle_objections", &[], |s| {
        *at(s, script) = json!(
            "Makes sense. When your contract ends, we start; before the filing deadline we audit."
        );
    });
}

#[test]
fn a_deadline_the_caller_gave_is_not_fake() {
    let script = "/deliverable/objections/1/response_script";
    let mut s = sample("handle_objections");
    *at(&mut s, script) =
        json!("Makes sense. Our spring offer ends this month, so the audit is free until then.");
    let req = request("handle_objections");
    assert_eq!(
        paths(&check(mode("handle_objections"), &req, &s)),
        vec![script]
    );
    let mut body = request_json("handle_objections");
    let said = body["messages"][0]["content"].as_str().unwrap().to_owned();
    body["messages"][0]["content"] = json!(format!(
        "{said} Our spring offer ends this month: a free network audit."
    ));
    let req = typed(body);
    assert_eq!(
        paths(&check(mode("handle_objections"), &req, &s)),
        Vec::<&str>::new()
    );
}
