use super::*;
use crate::envelope::{confidence_ceiling, missing_recommended};
use grove_common::catalog::{
    self, COACHES as CATALOG_COACHES, CoachId, MODES as CATALOG_MODES, ModeId,
};
use grove_common::requests::CoachingRequest;
use serde_json::{Value, json};

/// A request as the worker reads it back; the mode in the body does not matter to the prompts
/// (they are built for the mode given), so every test body is a `diagnose_growth` one.
fn typed(mut body: Value) -> CoachingRequest {
    body["mode"] = json!("diagnose_growth");
    grove_common::requests::from_stored(&body).expect("a coaching request")
}

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

/// A mode is its Rust module, its prompt and its sample: a field its deliverable type has (the
/// published schema is generated from the type) is one its prompt tells the model to write, so
/// renaming a field in the type fails here until the prompt follows.
#[test]
fn every_mode_prompt_names_every_field_of_its_deliverable_type() {
    fn fields(schema: &Value, out: &mut Vec<String>) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                out.push(k.clone());
                fields(v, out);
            }
        }
        if let Some(items) = schema.get("items") {
            fields(items, out);
        }
    }
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for m in CATALOG_MODES.iter() {
        let mut names = Vec::new();
        fields(&grove_common::modes::rules(m.id).schema(), &mut names);
        assert!(names.len() >= 4, "{}", m.id);
        let text = MODES[m.id];
        for name in names {
            let named = text.match_indices(name.as_str()).any(|(at, _)| {
                let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
                let after = text[at + name.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !word(c));
                before && after
            });
            assert!(named, "{}: the prompt never names `{name}`", m.id);
        }
    }
}

#[test]
fn system_prompt_states_caps_missing_fields_and_ceiling_for_every_coach_and_mode() {
    let request = typed(json!({"mode": "x", "messages": [{"role": "user", "content": "Help."}]}));
    for coach in CATALOG_COACHES.iter() {
        for (mode, _) in coach.offered_modes() {
            let missing = missing_recommended(mode, &request);
            let ceiling = confidence_ceiling(mode, &request);
            let (system, _) = build_as(coach, mode, &request, &missing, ceiling);
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
    let request = typed(
        json!({"messages": [{"role": "user", "content": "Flat at $42,000."}],
        "context": {"company": {"what_they_sell": "bookkeeping"}, "metrics": {
            "monthly_revenue_usd": 42000, "leads_per_month": 20, "close_rate_pct": 45}}}),
    );
    let (system, _) = build_as(coach, mode, &request, &[], Confidence::High);
    assert!(system.contains("All recommended context fields were given."));
    assert!(system.contains("Confidence ceiling: `high`"));
    assert!(system.contains("use only those"));
    assert!(system.starts_with("# You are Mary"));
}

#[test]
fn context_rides_on_the_first_user_turn_and_the_last_turn_is_the_users() {
    let request = typed(json!({"messages": [
        {"role": "user", "content": "Why is growth flat?"},
        {"role": "assistant", "content": "What do you sell?"},
        {"role": "user", "content": "Bookkeeping."}],
        "context": {"metrics": {"leads_per_month": 20}}}));
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
    let request = typed(
        json!({"messages": [{"role": "assistant", "content": "Hello."}],
        "context": {"metrics": {"leads_per_month": 20}}}),
    );
    let (_, turns) = build_default(&request);
    let roles: Vec<&str> = turns.iter().map(|t| t.0).collect();
    assert_eq!(roles, vec![USER, ASSISTANT, USER]);
    assert!(turns[0].1.starts_with("Business context"));

    let bare = typed(json!({"messages": [{"role": "assistant", "content": "Hello."}]}));
    let (_, turns) = build_default(&bare);
    let roles: Vec<&str> = turns.iter().map(|t| t.0).collect();
    assert_eq!(roles, vec![USER, ASSISTANT, USER]);
}

fn build_default(request: &CoachingRequest) -> (Arc<str>, Vec<(&'static str, String)>) {
    let mode = catalog::mode(ModeId::DiagnoseGrowth);
    let coach = catalog::coach(CoachId::Mary);
    build_as(coach, mode, request, &[], Confidence::Medium)
}

#[test]
#[ignore = "prints a rendered prompt for review: cargo test -p grove-worker print_prompt -- --ignored --nocapture"]
fn print_prompt() {
    let mode = catalog::mode(ModeId::RescueChurn);
    let coach = catalog::coach(CoachId::Violet);
    let request = typed(
        json!({"messages": [{"role": "user", "content": "We lose 7% of 240 members monthly."}],
        "context": {"audience": {"icp": "Adults new to strength training"}}}),
    );
    let missing = missing_recommended(mode, &request);
    let (system, turns) = build_as(
        coach,
        mode,
        &request,
        &missing,
        confidence_ceiling(mode, &request),
    );
    println!("{system}\n----\n{turns:?}");
}

/// `build` for `request` with the missing fields and ceiling given, as a call whose `Caller`
/// worked them out so.
fn build_as(
    coach: &Coach,
    mode: &Mode,
    request: &CoachingRequest,
    missing: &[&'static str],
    ceiling: Confidence,
) -> (Arc<str>, Vec<(&'static str, String)>) {
    let mut caller = Caller::of(mode, request);
    caller.missing = missing.to_vec();
    caller.ceiling = ceiling;
    build(coach, mode, &caller)
}

/// The system prompt of `coach` (or the mode's first coach) in `mode` for a bare request.
fn system_for(mode: ModeId, coach: Option<CoachId>) -> Arc<str> {
    let mode = catalog::mode(mode);
    let coach = match coach {
        Some(c) => catalog::coach(c),
        None => catalog::coaches_offering(mode.id).next().unwrap(),
    };
    let request = typed(json!({"messages": [{"role": "user", "content": "Help."}]}));
    build_as(coach, mode, &request, &[], Confidence::Low).0
}

#[test]
fn every_mode_shows_one_compact_example_drawn_from_its_sample() {
    for mode in CATALOG_MODES.iter() {
        let system = system_for(mode.id, None);
        let at = system
            .find("# Example answer for this mode")
            .unwrap_or_else(|| panic!("{}: no example", mode.id));
        assert!(
            at < system.find("# What the caller gave").unwrap(),
            "{}",
            mode.id
        );
        let line = system[at..].lines().find(|l| l.starts_with('{')).unwrap();
        let example: Value = serde_json::from_str(line).unwrap();
        let keys: Vec<&str> = example
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            crate::envelope::MODEL_ORDER,
            "{}: the model's keys, in order",
            mode.id
        );
        let coach = catalog::coaches_offering(mode.id).next().unwrap();
        let sample = grove_common::sandbox::coaching_sample(coach, mode).unwrap();
        assert_eq!(example["deliverable"], sample["deliverable"], "{}", mode.id);
        assert_eq!(example["thinking"], sample["thinking"], "{}", mode.id);
        let reply = sample["reply"].as_str().unwrap();
        assert!(
            reply.starts_with(example["reply"].as_str().unwrap()),
            "{}",
            mode.id
        );
        assert!(
            example["numbers"].as_array().unwrap().len() <= 2,
            "{}",
            mode.id
        );
        assert_eq!(
            example["actions"].as_array().unwrap().len(),
            1,
            "{}",
            mode.id
        );
        assert!(system.contains("Never reuse its facts, figures or names"));
    }
}

#[test]
fn audit_function_states_score_anchors_its_own_sample_follows() {
    // The prompt states exactly the bands the checker enforces (one table, in the envelope).
    let system = system_for(ModeId::AuditFunction, None);
    for (status, low, high) in crate::envelope::AUDIT_STATUS_BANDS {
        let needle = format!("{low} to {high}, `{status}`");
        assert!(system.contains(&needle), "{needle}");
    }
    assert!(system.contains("any\n`critical` finding holds `overall_score` below 50"));
    let mode = catalog::mode(ModeId::AuditFunction);
    let coach = catalog::coaches_offering(mode.id).next().unwrap();
    let sample = grove_common::sandbox::coaching_sample(coach, mode).unwrap();
    for finding in sample["deliverable"]["findings"].as_array().unwrap() {
        let score = finding["score"].as_f64().unwrap();
        let band = crate::envelope::AUDIT_STATUS_BANDS
            .iter()
            .find(|(_, low, high)| (*low..=*high).contains(&score))
            .unwrap()
            .0;
        assert_eq!(finding["status"], band, "{finding}");
    }
    assert!(!system_for(ModeId::FunnelReview, None).contains("Score anchors"));
}

#[test]
fn each_coach_maps_its_lens_onto_the_five_binding_constraints() {
    const VALUES: [&str; 5] = ["demand", "conversion", "retention", "pricing", "delivery"];
    // What each coach's catalog summary of diagnose_growth promises, and where it must land.
    let promised = [
        (CoachId::Mary, "money\nleft on each sale: `pricing`"),
        (
            CoachId::Reed,
            "between first call and signature: `conversion`",
        ),
        (CoachId::Iris, "or the channel: `demand`"),
        (CoachId::Oak, "could not be delivered: `delivery`"),
        (CoachId::Violet, "never reaches first value: `retention`"),
        (
            CoachId::Fern,
            "Manual work or broken tools that cap how many customers the team can serve: `delivery`",
        ),
        (
            CoachId::Willow,
            "Founder bandwidth or an empty seat that caps what gets delivered: `delivery`",
        ),
    ];
    for (coach, mapping) in promised {
        let system = system_for(ModeId::DiagnoseGrowth, Some(coach));
        let lens = &system[system.find("# Your lens on `binding_constraint`").unwrap()..];
        let lens = &lens[..lens.find("# What you return").unwrap()];
        assert!(lens.contains(mapping), "{coach}: {lens}");
        let named = VALUES
            .iter()
            .filter(|v| lens.contains(&format!("`{v}`")))
            .count();
        assert!(named >= 2, "{coach} maps onto the values: {lens}");
    }
    for mode in [ModeId::RescueChurn, ModeId::ScopeRole, ModeId::DecideStack] {
        assert!(!system_for(mode, None).contains("# Your lens"), "{mode}");
    }
}

#[test]
fn outbound_names_only_caller_given_senders_and_guides_each_channel() {
    let system = system_for(ModeId::WriteOutboundSequence, None);
    assert!(!system.contains("real-sounding"));
    for needle in [
        "Senders and names come only from the caller",
        "if the caller gave none, end the body without a signature",
        "Never invent a person",
        "`linkedin`: step 1 is the connection request",
        "under 200 characters",
        "`cold_call`: every step is a call or a voicemail",
        "a voicemail under 60 words",
    ] {
        assert!(system.contains(needle), "{needle}");
    }
    // The example it shows signs with no invented sender.
    let mode = catalog::mode(ModeId::WriteOutboundSequence);
    let coach = catalog::coaches_offering(mode.id).next().unwrap();
    let sample = grove_common::sandbox::coaching_sample(coach, mode).unwrap();
    for email in sample["deliverable"]["emails"].as_array().unwrap() {
        let body = email["body"].as_str().unwrap();
        let last = body.lines().last().unwrap();
        assert!(
            last.ends_with(['?', '.']),
            "ends with the ask, not a made-up name: {last}"
        );
    }
}

#[test]
fn calls_in_flight_with_the_same_inputs_share_one_system_prompt() {
    let request = typed(json!({"messages": [{"role": "user", "content": "We have 12 clients."}]}));
    let other_words =
        typed(json!({"messages": [{"role": "user", "content": "We have 40 clients."}]}));
    let (a, _) = build_default(&request);
    let (b, _) = build_default(&other_words);
    assert!(Arc::ptr_eq(&a, &b), "equal inputs rendered twice");

    let mode = catalog::mode(ModeId::DiagnoseGrowth);
    let coach = catalog::coach(CoachId::Mary);
    let (low, _) = build_as(coach, mode, &request, &[], Confidence::Low);
    assert!(low.contains("Confidence ceiling: `low`") && a.contains("`medium`"));
    let bare = typed(json!({"messages": [{"role": "user", "content": "Help."}]}));
    let (no_figures, _) = build_default(&bare);
    assert!(
        !Arc::ptr_eq(&a, &no_figures),
        "a caller without figures got a prompt about figures"
    );
}
