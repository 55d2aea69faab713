//! Assembly: server keys, computed gaps, the confidence ceiling, enum case and empty numbers.

use super::*;
use crate::envelope::{assemble, check, normalise_enums};

fn assembled(mode_id: &str, request: &CoachingRequest, model: Value) -> Value {
    let receipt = json!({"id": "r1", "url": "/api/v1/receipts/r1", "expires_at": null});
    let coach = catalog::coaches_offering(mode(mode_id).id).next().unwrap();
    assemble(
        coach.id,
        mode(mode_id),
        request,
        model,
        (1200, 800),
        receipt,
    )
}

#[test]
fn server_keys_are_filled_in_published_order_and_model_copies_ignored() {
    let mut model = model_part(&sample("diagnose_growth"));
    model["agent"] = json!("evil");
    model["usage"] = json!({"input_tokens": 1});
    model["extra"] = json!(true);
    let out = assembled("diagnose_growth", &request("diagnose_growth"), model);
    assert_eq!(out["agent"], json!("mary"), "diagnose_growth's first coach");
    assert_eq!(out["mode"], json!("diagnose_growth"));
    assert_eq!(
        out["usage"],
        json!({"input_tokens": 1200, "output_tokens": 800})
    );
    assert_eq!(out["receipt"]["id"], json!("r1"));
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys, crate::envelope::ENVELOPE_ORDER.to_vec());
}

#[test]
fn gaps_are_missing_fields_then_three_distinct_plain_word_extras() {
    let request = typed(json!({"mode": "diagnose_growth",
        "messages": [{"role": "user", "content": "We make $42,000 a month from 20 leads."}],
        "context": {"metrics": {"monthly_revenue_usd": 42000, "leads_per_month": 20}}}));
    let mut model = model_part(&sample("diagnose_growth"));
    model["context_gaps"] = json!([
        "Close rate pct",
        "metrics.close_rate_pct",
        "company.what_they_sell",
        "What they sell",
        "  churn by cohort ",
        "Churn by cohort",
        "",
        7,
        "pricing history",
        "refund rate",
        "fourth"
    ]);
    let out = assembled("diagnose_growth", &request, model);
    assert_eq!(
        out["context_gaps"],
        json!([
            "company.what_they_sell",
            "metrics.close_rate_pct",
            "churn by cohort",
            "pricing history",
            "refund rate"
        ])
    );
}

#[test]
fn confidence_is_clamped_down_to_the_ceiling_never_up() {
    let thin = typed(json!({"mode": "diagnose_growth",
        "messages": [{"role": "user", "content": "Growth is flat. Why?"}]}));
    let out = assembled(
        "diagnose_growth",
        &thin,
        model_part(&sample("diagnose_growth")),
    );
    assert_eq!(out["thinking"]["confidence"], json!("low"));

    let mut model = model_part(&sample("diagnose_growth"));
    model["thinking"]["confidence"] = json!("low");
    let out = assembled("diagnose_growth", &request("diagnose_growth"), model);
    assert_eq!(out["thinking"]["confidence"], json!("low"));
}

#[test]
fn insufficient_capacity_data_lowers_confidence_to_low() {
    let mut model = model_part(&sample("plan_capacity"));
    model["deliverable"]["verdict"] = json!("insufficient_data");
    let out = assembled("plan_capacity", &request("plan_capacity"), model);
    assert_eq!(out["thinking"]["confidence"], json!("low"));
    assert_eq!(
        check(mode("plan_capacity"), &request("plan_capacity"), &out),
        vec![]
    );
}

#[test]
fn numbers_are_emptied_when_the_caller_gave_none() {
    let words = typed(json!({"mode": "diagnose_growth",
        "messages": [{"role": "user", "content": "Growth is flat. Why?"}],
        "context": {"company": {"what_they_sell": "bookkeeping"}}}));
    let out = assembled(
        "diagnose_growth",
        &words,
        model_part(&sample("diagnose_growth")),
    );
    assert_eq!(out["numbers"], json!([]));
}

#[test]
fn enum_case_is_repaired_against_the_published_schema() {
    let mut model = model_part(&sample("decide_stack"));
    model["thinking"]["confidence"] = json!("HIGH");
    model["deliverable"]["status"] = json!("Proposed");
    model["deliverable"]["options"][0]["option"] = json!(" Buy ");
    model["deliverable"]["decision"]["choice"] = json!("BUY");
    model["actions"][0]["effort"] = json!("Hours");
    let out = assembled("decide_stack", &request("decide_stack"), model);
    assert_eq!(out["thinking"]["confidence"], json!("high"));
    assert_eq!(out["deliverable"]["status"], json!("proposed"));
    assert_eq!(out["deliverable"]["options"][0]["option"], json!("buy"));
    assert_eq!(out["deliverable"]["decision"]["choice"], json!("buy"));
    assert_eq!(out["actions"][0]["effort"], json!("hours"));
    let schema = &registry().mode(ModeId::DecideStack).response;
    assert_eq!(schema.violations(&out), vec![]);

    // Free text is never touched, and a value outside the enum is left for the validator.
    let schema = json!({"properties": {"a": {"enum": ["x"]}, "b": {"type": "string"}}});
    let mut v = json!({"a": "Y", "b": "X"});
    normalise_enums(&schema, &mut v);
    assert_eq!(v, json!({"a": "Y", "b": "X"}));
}

#[test]
fn a_non_object_answer_yields_an_envelope_the_validator_rejects() {
    let out = assembled(
        "diagnose_growth",
        &request("diagnose_growth"),
        json!("sorry"),
    );
    assert_eq!(out["context_gaps"], json!([]));
    let schema = &registry().mode(ModeId::DiagnoseGrowth).response;
    let v = schema.violations(&out);
    assert!(
        paths(&v).contains(&"/reply") && paths(&v).contains(&"/deliverable"),
        "{v:?}"
    );
}
