use super::*;

const LINK: &str = "https://grove.example/r/AAAAAAAAAAAAAAAAAAAAAA";

fn messages(result: Result<Rendered, Vec<Violation>>) -> Vec<String> {
    let errors = result.expect_err("expected violations");
    assert!(errors.iter().all(|v| v.path == PATH), "{errors:?}");
    errors.into_iter().map(|v| v.message).collect()
}

#[test]
fn default_template_is_polite_with_the_opt_out_sentence_in_one_segment() {
    let r = render(None, "Sarah", "Maria's Salon", LINK).unwrap();
    assert_eq!(
        r.body,
        format!(
            "Hi Sarah, thanks for choosing Maria's Salon! Would you leave us a quick review? \
             {LINK} Reply STOP to opt out."
        )
    );
    assert_eq!((r.encoding, r.segments), (Encoding::Gsm7, 1));
}

#[test]
fn custom_template_fills_every_token_and_keeps_its_own_opt_out() {
    let r = render(
        Some("{first_name}, review {business_name}: {review_link} (reply stop to opt out)"),
        "Sam",
        "Bob's Bikes",
        LINK,
    )
    .unwrap();
    assert_eq!(
        r.body,
        format!("Sam, review Bob's Bikes: {LINK} (reply stop to opt out)")
    );
}

#[test]
fn opt_out_sentence_is_appended_when_the_template_has_no_instruction() {
    for template in [
        "{business_name} would love a review: {review_link}",
        "Stop by {business_name} again soon! {review_link}",
        "{business_name} {review_link} nonstop thanks",
        // STOP in another sense is no instruction (issue 10).
        "URGENT {business_name}: NON STOP savings {review_link}",
        "{business_name}: {review_link} STOP by again",
        "{business_name}: {review_link} Reply STOP to win a prize",
        // STOP to do something else than opt out (issue 10).
        "{business_name}: {review_link} Reply STOP to opt in",
        "{business_name}: {review_link} Reply STOP to cancel your booking",
        "{business_name}: {review_link} Reply STOP to end your visit early",
        "{business_name}: {review_link} Text STOP to quit the waitlist.",
        "{business_name}: {review_link} Reply STOP to optimise",
    ] {
        let r = render(Some(template), "Al", "Quick Stop", LINK).unwrap();
        assert!(
            r.body.ends_with(" Reply STOP to opt out."),
            "{template}: {}",
            r.body
        );
    }
    // Instructions in that exact sense count, in any case.
    for template in [
        "{business_name}: {review_link} STOP to end",
        "{business_name}: {review_link} Text stop to unsubscribe",
        "{business_name}: {review_link} Reply STOP to opt out",
        "{business_name}: {review_link} (reply stop.)",
        "{business_name}: {review_link} Reply STOP to opt-out of these texts",
        "{business_name}: {review_link} Msg&data rates may apply. Reply STOP to cancel.",
        "{business_name}: {review_link} Txt STOP to end messages",
        "{business_name}: {review_link} Reply STOP to stop receiving texts",
        "{business_name}: {review_link} Reply STOP to opt out of future messages",
        "{business_name}: {review_link} Reply STOP to unsubscribe from our list",
    ] {
        let r = render(Some(template), "Al", "Acme", LINK).unwrap();
        assert!(!r.body.contains(OPT_OUT_SENTENCE), "{template}");
    }
}

#[test]
fn a_business_name_containing_stop_does_not_count_as_an_opt_out() {
    let r = render(
        Some("{business_name}: {review_link}"),
        "Al",
        "One STOP Shop",
        LINK,
    )
    .unwrap();
    assert!(r.body.ends_with(OPT_OUT_SENTENCE), "{}", r.body);
}

#[test]
fn missing_required_tokens_and_unknown_tokens_are_all_reported() {
    let m = messages(render(
        Some("Hi {first_name} {discount} {discount} {last_name}"),
        "Al",
        "Acme",
        LINK,
    ));
    assert_eq!(m.len(), 4, "{m:?}");
    assert!(
        m[0].contains("{discount}") && m[1].contains("{last_name}"),
        "{m:?}"
    );
    assert!(
        m[2].contains("{business_name}") && m[3].contains("{review_link}"),
        "{m:?}"
    );
    let m = messages(render(
        Some("{business_name} {review_link} {first_name"),
        "A",
        "B",
        LINK,
    ));
    assert_eq!(m, ["has a '{' that is never closed"]);
}

#[test]
fn values_are_inserted_literally_never_expanded_again() {
    let r = render(None, "{review_link}", "{first_name}", LINK).unwrap();
    assert!(
        r.body
            .starts_with("Hi {review_link}, thanks for choosing {first_name}!")
    );
    assert_eq!(r.body.matches(LINK).count(), 1);
}

#[test]
fn rendered_length_over_320_is_refused_naming_the_length() {
    let long = format!("{{business_name}} {{review_link}} {}", "x".repeat(250));
    let m = messages(render(Some(&long), "Al", "Acme", LINK));
    assert_eq!(m.len(), 1);
    // 4 + 1 + 46 + 1 + 250 + 1 + 22 = 325.
    assert!(m[0].contains("325 characters"), "{m:?}");
    let fits = format!("{{business_name}} {{review_link}} {}", "x".repeat(245));
    assert_eq!(
        render(Some(&fits), "Al", "Acme", LINK).unwrap().body.len(),
        320
    );
}

#[test]
fn non_gsm_names_switch_to_ucs2_and_count_more_segments() {
    let r = render(None, "Zoë", "Maria\u{2019}s Salon", LINK).unwrap();
    assert_eq!(r.encoding, Encoding::Ucs2);
    assert_eq!(r.segments, 3, "{} chars", r.body.chars().count());
}

#[test]
fn follow_up_is_short_and_carries_the_opt_out() {
    let r = render_follow_up("Sarah", "Maria's Salon", LINK);
    assert!(
        r.body
            .starts_with("Hi Sarah, a quick reminder from Maria's Salon")
    );
    assert!(r.body.contains(LINK));
    assert!(r.body.ends_with(OPT_OUT_SENTENCE));
    assert_eq!((r.encoding, r.segments), (Encoding::Gsm7, 1));
}

#[test]
fn rendered_serialises_with_the_contract_field_names() {
    let r = render(None, "Sarah", "Acme", LINK).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["encoding"], "GSM-7");
    assert_eq!(json["segments"], 1);
    assert!(json["body"].as_str().unwrap().contains("Sarah"));
}

#[test]
fn links_and_control_characters_in_the_template_are_refused_with_every_problem() {
    let m = messages(render(
        Some(
            "URGENT {business_name}: your account is locked, verify at https://bit.ly/x9 now\u{7}. NON STOP {review_link}",
        ),
        "Al",
        "Acme",
        LINK,
    ));
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[0].contains("control character"), "{m:?}");
    assert!(m[1].contains("shortener"), "{m:?}");
}

#[test]
fn names_and_template_words_that_join_into_an_address_are_refused() {
    let m = messages(render(
        Some("{business_name}.ly/x9 {review_link}"),
        "Al",
        "bit",
        LINK,
    ));
    assert_eq!(m.len(), 1);
    assert!(m[0].contains("together form a web address"), "{m:?}");
}
