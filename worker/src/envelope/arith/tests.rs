use super::*;

fn faults(basis: &str) -> Vec<String> {
    evaluate(basis, &|_| None).faults
}

fn ok(basis: &str) {
    assert_eq!(faults(basis), Vec::<String>::new(), "{basis}");
}

fn wrong(basis: &str, needle: &str) {
    let f = faults(basis);
    assert!(f.iter().any(|m| m.contains(needle)), "{basis}: {f:?}");
}

#[test]
fn a_wrong_product_with_a_rate_is_refused_and_the_right_one_passes() {
    wrong(
        "30 leads × 20% close rate = 9",
        "9 is not what the calculation gives (6)",
    );
    ok("30 leads × 20% close rate = 6");
    ok("30 leads x 20% close rate = 6 new clients");
    ok("20% of 30 leads = 6");
    // With the caller's 30 and 20% known exactly, 6.1 is wrong too.
    let exact = |f: &Figure| {
        [30.0, 20.0]
            .contains(&f.value)
            .then(|| Interval::point(f.value))
    };
    assert!(!evaluate("30 leads * 20% = 6.1", &exact).faults.is_empty());
}

#[test]
fn operators_precedence_brackets_and_separators() {
    ok("($690 - $590) / $690 = 14.5%");
    ok("6 sessions × $95 + $120 gait analysis = $690");
    ok("12 clients × ($340 − $210) = $1,560 a month");
    ok("(21 + 9 + 12) / 50 cancellations = 84%");
    ok("$12,000 ÷ 4 = $3,000");
    ok("9 new clients at $500 = $4,500");
    ok("(6.7 + 12.5) hours × 4.33 weeks + 12.5 hours = 95.6 hours");
    ok("52 visits × $150 / 12 months = $650 a month");
    wrong("6 sessions × $95 + $120 = $600", "600");
    wrong("(21 + 9 + 12) / 50 = 74%", "74%");
}

#[test]
fn results_are_compared_at_the_precision_they_are_shown_with() {
    ok("$4,500 replaced each month / $42,000 monthly revenue = 10.7%");
    wrong("$4,500 / $42,000 = 10.2%", "10.2%");
    ok("$180 / 330 grooms a month = $0.55");
    ok("$1,400 average emergency call / $180 planned visit = 7.8x");
    ok("240 members × 7% monthly churn = 16.8, about 17");
    ok("$110,000 / $4,000 = 27.5, rounded up to 28 projects");
    ok("20 hours a week × 4.33 weeks = 86.6 hours");
    ok("$2,503 × 84% × 50% = $1,051");
    // Rounded operands carry their rounding: 10.7% of $42,000 is about $4,500.
    ok("10.7% × $42,000 = $4,500");
    // But an operand we know exactly has none: 45% of 20 is 9, not 9.3.
    let exact = |f: &Figure| (f.value == 20.0 || f.value == 45.0).then(|| Interval::point(f.value));
    assert!(!evaluate("20 × 45% = 9.3", &exact).faults.is_empty());
    ok("$4,494 / 1 = about $4,500");
}

#[test]
fn chains_convert_units_and_continue_from_a_shown_result() {
    ok("40 requests × 10 minutes = 400 minutes = 6.7 hours");
    ok("28 - 20 = 8 projects / 5 per crew = 1.6 crews");
    ok("90 × 80% = 72 demos × 33% = 24 customers");
    wrong("40 requests × 10 minutes = 400 minutes = 7.5 hours", "7.5");
    // Written integers may be rounded results; known ones are exact.
    let exact = |f: &Figure| {
        [28.0, 20.0]
            .contains(&f.value)
            .then(|| Interval::point(f.value))
    };
    let c = evaluate("28 - 20 = 9 projects / 5 = 1.8 crews", &exact);
    assert!(c.faults[0].starts_with("9 is not"), "{:?}", c.faults);
}

#[test]
fn rates_alone_may_be_read_in_points() {
    ok("45% − 40% = 5 points");
    ok("25% − 15% = 10%");
    wrong("30 × 20% = 600", "600");
}

#[test]
fn qualifying_durations_are_not_operands_but_missing_operators_are_faults() {
    let c = evaluate(
        "$38,000 over 30 days / $210,000 monthly revenue = 18%",
        &|_| None,
    );
    assert_eq!(c.faults, Vec::<String>::new());
    assert_eq!(c.operands.len(), 3, "30 is still a figure to trace");
    wrong("From 40 inquiries, 4 bookings = 10%", "operator");
    wrong("40 × = 10", "operator without a figure");
    wrong("(40 / 4 = 10", "unclosed bracket");
    wrong("40 / (4 - 4) = 10", "divides by zero");
}

#[test]
fn hyphens_and_per_slashes_are_not_operators() {
    ok("25 move-outs a month × 3 months = 75");
    ok("$18,000 build quote / $180/month = 100 months");
    ok("2 visits × $170 = $340 a month");
}

#[test]
fn restated_results_and_trailing_figures_are_reported_for_tracing() {
    let c = evaluate("caller's monthly price = $149", &|_| None);
    assert_eq!(c.restated.len(), 1);
    assert!(c.faults.is_empty());
    let c = evaluate("2 shared + 2 orphaned outcomes = 4 of 7", &|_| None);
    assert!(c.faults.is_empty());
    assert_eq!(c.trailing.len(), 1);
    assert_eq!(c.results.len(), 1);
    assert!(faults("20 × 2 =").iter().any(|f| f.contains("no result")));
}

/// The model writes `basis`: no text may panic the reader, only produce faults.
#[test]
fn odd_text_never_panics() {
    let odd = [
        "",
        "=",
        "≈≈",
        "((1 = 2",
        "1))) = 1",
        "$ = %",
        "- = -",
        "1, = 1.",
        "1e5 = 100000",
        "½ = 0.5",
        "١٢٣ = 123",
        "🎯 7 × 🎯 = 7",
        "24/7/365 = 1",
        "x x x = 3",
        "9am: = :30",
        "0 / 0 = 0",
        "1 / 0.0 = 1",
        "99999999999999999999 × 9 = 1",
        "—5 = 5",
        "5%% = 5",
    ];
    for text in odd {
        let _ = evaluate(text, &|_| None);
        let _ = evaluate(text, &|f| Some(Interval::point(f.value)));
    }
}
