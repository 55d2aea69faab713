use super::*;

fn fields(text: &str) -> Vec<&'static str> {
    let mut f = stated_fields([text].into_iter());
    f.sort_unstable();
    f
}

#[test]
fn the_issue_example_gives_three_metrics() {
    assert_eq!(
        fields("We make $42,000 a month, get 30 leads a month and close 20%."),
        vec![
            "metrics.close_rate_pct",
            "metrics.leads_per_month",
            "metrics.monthly_revenue_usd"
        ]
    );
}

#[test]
fn other_metrics_and_descriptions() {
    assert_eq!(
        fields("We lose about 7% of members monthly."),
        vec!["metrics.monthly_churn_pct"]
    );
    assert_eq!(
        fields("Our average order is $210."),
        vec!["metrics.average_order_value_usd"]
    );
    assert_eq!(fields("We charge $180 per visit."), vec!["offer.price_usd"]);
    assert_eq!(
        fields("6,000 site visits a month."),
        vec!["metrics.traffic_per_month"]
    );
    assert_eq!(
        fields("We sell bookkeeping to small firms."),
        vec!["company.what_they_sell"]
    );
    assert_eq!(fields("See https://example.com"), vec!["company.website"]);
    assert_eq!(
        fields("Our ideal customer is a dental office."),
        vec!["audience.icp"]
    );
}

#[test]
fn wishes_other_businesses_and_loose_figures_do_not_count() {
    assert_eq!(
        fields("We want to make $60,000 a month."),
        Vec::<&str>::new()
    );
    assert_eq!(
        fields("Similar studios book 15% of inquiries."),
        Vec::<&str>::new()
    );
    assert_eq!(fields("I'm thinking of charging $590."), Vec::<&str>::new());
    assert_eq!(
        fields("Revenue is flat and we got 30 leads."),
        Vec::<&str>::new()
    );
    assert_eq!(fields("Target is $110,000 a month."), Vec::<&str>::new());
    assert_eq!(
        fields("Clients pay $500 a month on average."),
        Vec::<&str>::new()
    );
    assert_eq!(
        fields("We close 20% of demos? No: 12% churn."),
        vec!["metrics.close_rate_pct"]
    );
}

#[test]
fn odd_messages_never_panic() {
    for text in [
        "",
        ".",
        ",,,",
        "and and but",
        "$",
        "%",
        "🎯 we make $1 a month",
        "x\n\n;;",
    ] {
        let _ = stated_fields([text].into_iter());
    }
}
