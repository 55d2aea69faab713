//! Issue 9, item 3: facts stated in the caller's messages count for coverage, the confidence
//! ceiling and `context_gaps`, under the same names as `context`.

use super::*;
use crate::envelope::{Confidence, assemble, confidence_ceiling, missing_recommended};

fn said(text: &str) -> CoachingRequest {
    typed(json!({"mode": "diagnose_growth", "messages": [{"role": "user", "content": text}]}))
}

#[test]
fn the_issue_message_fills_three_metrics_without_any_context() {
    let m = mode("diagnose_growth");
    let r =
        said("We make $42,000 a month, get 30 leads a month and close 20%. Why is growth flat?");
    assert_eq!(missing_recommended(m, &r), vec!["company.what_they_sell"]);
    assert_eq!(confidence_ceiling(m, &r), Confidence::High);
    let out = assemble(
        CoachId::Mary,
        m,
        &r,
        model_part(&sample(m.id)),
        (0, 0),
        json!({}),
    );
    assert_eq!(out["context_gaps"][0], json!("company.what_they_sell"));
    assert!(
        !out["context_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g.as_str().unwrap().starts_with("metrics.")),
        "{}",
        out["context_gaps"]
    );
}

#[test]
fn what_the_caller_sells_counts_from_a_plain_statement() {
    let m = mode("diagnose_growth");
    let r = said(
        "We sell monthly bookkeeping to restaurants. We make $42,000 a month, get 30 leads a month and close 20%.",
    );
    assert_eq!(missing_recommended(m, &r), Vec::<&str>::new());
}

#[test]
fn wishes_other_firms_and_earlier_assistant_turns_do_not_count() {
    let m = mode("diagnose_growth");
    for text in [
        "We want to make $60,000 a month and hope to get 50 leads a month.",
        "Similar firms close 20% of leads and make $42,000 a month.",
    ] {
        assert_eq!(missing_recommended(m, &said(text)).len(), 4, "{text}");
        assert_eq!(
            confidence_ceiling(m, &said(text)),
            Confidence::Low,
            "{text}"
        );
    }
    let r = typed(json!({"mode": "diagnose_growth", "messages": [
        {"role": "assistant", "content": "You make $42,000 a month and close 20%."},
        {"role": "user", "content": "Why is growth flat?"}]}));
    assert_eq!(missing_recommended(m, &r).len(), 4);
}

#[test]
fn each_metric_reads_under_its_context_name() {
    let cases = [
        (
            "rescue_churn",
            "We lose about 7% of members monthly.",
            "metrics.monthly_churn_pct",
        ),
        (
            "rewrite_pricing",
            "Our average order is $210.",
            "metrics.average_order_value_usd",
        ),
        (
            "rewrite_pricing",
            "We charge $180 per visit.",
            "offer.price_usd",
        ),
        (
            "funnel_review",
            "We get 6,000 site visits a month.",
            "metrics.traffic_per_month",
        ),
        (
            "funnel_review",
            "Our site is https://example.com",
            "company.website",
        ),
        (
            "write_outbound_sequence",
            "Our ideal customer is a property manager.",
            "audience.icp",
        ),
    ];
    for (mode_id, text, field) in cases {
        let m = mode(mode_id);
        let bare =
            typed(json!({"mode": mode_id, "messages": [{"role": "user", "content": "Help."}]}));
        let r = typed(json!({"mode": mode_id, "messages": [{"role": "user", "content": text}]}));
        assert!(missing_recommended(m, &bare).contains(&field), "{field}");
        assert!(
            !missing_recommended(m, &r).contains(&field),
            "{text} → {field}"
        );
    }
}
