use super::*;
use crate::envelope::{confidence_ceiling, missing_recommended};
use grove_common::catalog::{
    self, COACHES as CATALOG_COACHES, CoachId, MODES as CATALOG_MODES, ModeId,
};
use serde_json::json;

#[test]
fn every_coach_and_mode_has_its_own_prompt_file() {
    for c in CATALOG_COACHES.iter() {
        let text = COACHES[c.id];
        assert!(text.len() > 200, "{} prompt is a stub", c.id);
        assert!(text.contains(c.name), "{} persona", c.id);
    }
    for m in CATALOG_MODES.iter() {
        let text = MODES[m.id];
        assert!(text.len() > 200, "{} prompt is a stub", m.id);
        let header = format!("# Mode: {}", m.id);
        assert!(text.starts_with(&header), "{}", m.id);
    }
}

#[test]
fn system_prompt_states_caps_missing_fields_and_ceiling_for_every_coach_and_mode() {
    let request = json!({"mode": "x", "messages": [{"role": "user", "content": "Help."}]});
    for coach in CATALOG_COACHES.iter() {
        for (mode, _) in coach.offered_modes() {
            let missing = missing_recommended(mode, &request);
            let ceiling = confidence_ceiling(mode, &request);
            let (system, _) = build(coach, mode, &request, &missing, ceiling);
            let caps = mode.tier.caps();
            for needle in [
                format!("at most {} characters", caps.reply_max_chars),
                format!("under {} words", caps.reply_word_target),
                format!("`numbers`: at most {} items", caps.numbers_max),
                format!("{} to {} items", caps.actions_min, caps.actions_max),
                format!("`caveats`: at most {} items", caps.caveats_max),
                format!("# Mode: {}", mode.id),
                "Confidence ceiling: `low`".to_owned(),
                "`numbers` must be []".to_owned(),
                "# Honesty rules".to_owned(),
            ] {
                assert!(
                    system.contains(&needle),
                    "{}/{}: {needle}",
                    coach.id,
                    mode.id
                );
            }
            for field in mode.recommended_context {
                assert!(system.contains(field), "{}/{}: {field}", coach.id, mode.id);
            }
        }
    }
}

#[test]
fn full_context_says_so_and_allows_the_callers_figures() {
    let mode = catalog::mode(ModeId::DiagnoseGrowth);
    let coach = catalog::coach(CoachId::Mary);
    let request = json!({"messages": [{"role": "user", "content": "Flat at $42,000."}],
        "context": {"company": {"what_they_sell": "bookkeeping"}, "metrics": {
            "monthly_revenue_usd": 42000, "leads_per_month": 20, "close_rate_pct": 45}}});
    let (system, _) = build(coach, mode, &request, &[], Confidence::High);
    assert!(system.contains("All recommended context fields were given."));
    assert!(system.contains("Confidence ceiling: `high`"));
    assert!(system.contains("use only those"));
    assert!(system.starts_with("# You are Mary"));
}

#[test]
fn context_rides_on_the_first_user_turn_and_the_last_turn_is_the_users() {
    let request = json!({"messages": [
        {"role": "user", "content": "Why is growth flat?"},
        {"role": "assistant", "content": "What do you sell?"},
        {"role": "user", "content": "Bookkeeping."}],
        "context": {"metrics": {"leads_per_month": 20}}});
    let (_, turns) = build_default(&request);
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0].0, USER);
    assert_eq!(
        turns[0].1,
        "Business context (JSON, from the caller):\n{\"metrics\":{\"leads_per_month\":20}}\n\n\
         Why is growth flat?"
    );
    assert_eq!(turns[1], (ASSISTANT, "What do you sell?".to_owned()));
    assert_eq!(turns[2], (USER, "Bookkeeping.".to_owned()));
}

#[test]
fn a_conversation_opening_or_ending_with_the_assistant_is_wrapped_in_user_turns() {
    let request = json!({"messages": [{"role": "assistant", "content": "Hello."}],
        "context": {"metrics": {"leads_per_month": 20}}});
    let (_, turns) = build_default(&request);
    let roles: Vec<&str> = turns.iter().map(|t| t.0).collect();
    assert_eq!(roles, vec![USER, ASSISTANT, USER]);
    assert!(turns[0].1.starts_with("Business context"));

    let bare = json!({"messages": [{"role": "assistant", "content": "Hello."}]});
    let (_, turns) = build_default(&bare);
    let roles: Vec<&str> = turns.iter().map(|t| t.0).collect();
    assert_eq!(roles, vec![USER, ASSISTANT, USER]);
}

fn build_default(request: &Value) -> (String, Vec<(&'static str, String)>) {
    let mode = catalog::mode(ModeId::DiagnoseGrowth);
    let coach = catalog::coach(CoachId::Mary);
    build(coach, mode, request, &[], Confidence::Medium)
}

#[test]
#[ignore = "prints a rendered prompt for review: cargo test -p grove-worker print_prompt -- --ignored --nocapture"]
fn print_prompt() {
    let mode = catalog::mode(ModeId::RescueChurn);
    let coach = catalog::coach(CoachId::Violet);
    let request = json!({"messages": [{"role": "user", "content": "We lose 7% of 240 members monthly."}],
        "context": {"audience": {"icp": "Adults new to strength training"}}});
    let missing = missing_recommended(mode, &request);
    let (system, turns) = build(
        coach,
        mode,
        &request,
        &missing,
        confidence_ceiling(mode, &request),
    );
    println!("{system}\n----\n{turns:?}");
}
