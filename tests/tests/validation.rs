//! Request validation (CONTRACT 5): one invalid body per constraint of spec 2.3 and section 8,
//! each answered 422 naming its JSON pointer; the edge statuses 400, 404, 413, 415; and the
//! Idempotency-Key rules. Nothing here may be answered with a 402.

use grove_tests::{
    action_body, coaching_body, detail_paths, remove_pointer, set_pointer, spawn_app,
};
use serde_json::{Value, json};

const CALL: &str = "/api/v1/agents/mary/call";

fn s(n: usize) -> Value {
    json!("a".repeat(n))
}

/// (what, pointer to change, new value or None to remove, pointer expected in details)
fn coaching_cases() -> Vec<(&'static str, &'static str, Option<Value>, &'static str)> {
    let msgs41: Vec<Value> = (0..41)
        .map(|_| json!({"role": "user", "content": "hi"}))
        .collect();
    vec![
        ("mode missing", "/mode", None, "/mode"),
        (
            "mode not one of sixteen",
            "/mode",
            Some(json!("make_coffee")),
            "/mode",
        ),
        ("mode not a string", "/mode", Some(json!(7)), "/mode"),
        ("messages missing", "/messages", None, "/messages"),
        ("messages empty", "/messages", Some(json!([])), "/messages"),
        (
            "messages over 40",
            "/messages",
            Some(Value::Array(msgs41)),
            "/messages",
        ),
        (
            "messages not an array",
            "/messages",
            Some(json!("hi")),
            "/messages",
        ),
        (
            "role not user/assistant",
            "/messages/0/role",
            Some(json!("system")),
            "/messages/0/role",
        ),
        ("role missing", "/messages/0/role", None, "/messages/0/role"),
        (
            "content missing",
            "/messages/0/content",
            None,
            "/messages/0/content",
        ),
        (
            "content empty",
            "/messages/0/content",
            Some(json!("")),
            "/messages/0/content",
        ),
        (
            "content over 20000",
            "/messages/0/content",
            Some(s(20_001)),
            "/messages/0/content",
        ),
        (
            "message extra key",
            "/messages/0/name",
            Some(json!("x")),
            "/messages/0/name",
        ),
        (
            "unknown top-level key",
            "/temperature",
            Some(json!(0.2)),
            "/temperature",
        ),
        (
            "context not an object",
            "/context",
            Some(json!("ctx")),
            "/context",
        ),
        (
            "unknown context section",
            "/context/weather",
            Some(json!({})),
            "/context/weather",
        ),
        (
            "company.name over 200",
            "/context/company/name",
            Some(s(201)),
            "/context/company/name",
        ),
        (
            "company.what_they_sell over 2000",
            "/context/company/what_they_sell",
            Some(s(2001)),
            "/context/company/what_they_sell",
        ),
        (
            "company.stage not in enum",
            "/context/company/stage",
            Some(json!("unicorn")),
            "/context/company/stage",
        ),
        (
            "company.industry over 200",
            "/context/company/industry",
            Some(s(201)),
            "/context/company/industry",
        ),
        (
            "company.website over 500",
            "/context/company/website",
            Some(s(501)),
            "/context/company/website",
        ),
        (
            "company unknown key",
            "/context/company/ceo",
            Some(json!("x")),
            "/context/company/ceo",
        ),
        (
            "monthly_revenue_usd negative",
            "/context/metrics/monthly_revenue_usd",
            Some(json!(-1)),
            "/context/metrics/monthly_revenue_usd",
        ),
        (
            "mrr_usd negative",
            "/context/metrics/mrr_usd",
            Some(json!(-0.5)),
            "/context/metrics/mrr_usd",
        ),
        (
            "leads_per_month negative",
            "/context/metrics/leads_per_month",
            Some(json!(-3)),
            "/context/metrics/leads_per_month",
        ),
        (
            "leads_per_month not a number",
            "/context/metrics/leads_per_month",
            Some(json!("ten")),
            "/context/metrics/leads_per_month",
        ),
        (
            "close_rate_pct over 100",
            "/context/metrics/close_rate_pct",
            Some(json!(100.5)),
            "/context/metrics/close_rate_pct",
        ),
        (
            "close_rate_pct negative",
            "/context/metrics/close_rate_pct",
            Some(json!(-1)),
            "/context/metrics/close_rate_pct",
        ),
        (
            "average_order_value_usd negative",
            "/context/metrics/average_order_value_usd",
            Some(json!(-1)),
            "/context/metrics/average_order_value_usd",
        ),
        (
            "cac_usd negative",
            "/context/metrics/cac_usd",
            Some(json!(-1)),
            "/context/metrics/cac_usd",
        ),
        (
            "monthly_churn_pct over 100",
            "/context/metrics/monthly_churn_pct",
            Some(json!(101)),
            "/context/metrics/monthly_churn_pct",
        ),
        (
            "traffic_per_month negative",
            "/context/metrics/traffic_per_month",
            Some(json!(-1)),
            "/context/metrics/traffic_per_month",
        ),
        (
            "offer.name over 200",
            "/context/offer/name",
            Some(s(201)),
            "/context/offer/name",
        ),
        (
            "offer.price_usd negative",
            "/context/offer/price_usd",
            Some(json!(-10)),
            "/context/offer/price_usd",
        ),
        (
            "offer.promise over 2000",
            "/context/offer/promise",
            Some(s(2001)),
            "/context/offer/promise",
        ),
        (
            "offer.guarantee over 1000",
            "/context/offer/guarantee",
            Some(s(1001)),
            "/context/offer/guarantee",
        ),
        (
            "audience.icp over 2000",
            "/context/audience/icp",
            Some(s(2001)),
            "/context/audience/icp",
        ),
        (
            "audience.pain over 2000",
            "/context/audience/pain",
            Some(s(2001)),
            "/context/audience/pain",
        ),
        (
            "audience.segments over 20 items",
            "/context/audience/segments",
            Some(json!(vec!["x"; 21])),
            "/context/audience/segments",
        ),
        (
            "audience.segments item over 200",
            "/context/audience/segments",
            Some(json!(["a".repeat(201)])),
            "/context/audience/segments/0",
        ),
    ]
}

#[tokio::test]
async fn each_violated_constraint_is_a_422_naming_its_path() {
    let app = spawn_app().await;
    for (what, pointer, value, expected) in coaching_cases() {
        let mut body = coaching_body("diagnose_growth");
        match value {
            Some(v) => set_pointer(&mut body, pointer, v),
            None => remove_pointer(&mut body, pointer),
        }
        let r = app.post_json(CALL, &body, &[]).await;
        assert_eq!(r.status(), 422, "{what}");
        let err: Value = r.json().await.expect("json");
        assert_eq!(err["error"]["code"], "validation_failed", "{what}");
        let paths = detail_paths(&err);
        assert!(
            paths.iter().any(|p| p == expected),
            "{what}: expected {expected} in {paths:?}"
        );
        assert!(
            err["error"]["request_id"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
    }
}

#[tokio::test]
async fn limits_are_inclusive() {
    let app = spawn_app().await;
    let mut body = coaching_body("diagnose_growth");
    let msgs: Vec<Value> = (0..40).map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": "a".repeat(20_000)})).collect();
    body["messages"] = Value::Array(msgs);
    set_pointer(&mut body, "/context/metrics/close_rate_pct", json!(100));
    set_pointer(&mut body, "/context/metrics/monthly_churn_pct", json!(0));
    set_pointer(&mut body, "/context/company/name", s(200));
    set_pointer(
        &mut body,
        "/context/audience/segments",
        json!(vec!["b".repeat(200); 20]),
    );
    let r = app.post_json(CALL, &body, &[]).await;
    assert_eq!(
        r.status(),
        402,
        "a body at every limit is valid and gets the challenge"
    );
}

#[tokio::test]
async fn every_violation_is_listed_not_just_the_first() {
    let app = spawn_app().await;
    let mut body = coaching_body("funnel_review");
    set_pointer(&mut body, "/messages/0/role", json!("robot"));
    set_pointer(&mut body, "/context/metrics/close_rate_pct", json!(300));
    set_pointer(&mut body, "/context/company/stage", json!("teen"));
    set_pointer(&mut body, "/extra", json!(true));
    let r = app.post_json(CALL, &body, &[]).await;
    let err: Value = r.json().await.expect("json");
    let paths = detail_paths(&err);
    for p in [
        "/messages/0/role",
        "/context/metrics/close_rate_pct",
        "/context/company/stage",
        "/extra",
    ] {
        assert!(paths.contains(&p.to_owned()), "{p} missing in {paths:?}");
    }
    assert!(
        err.to_string().len() < 4000,
        "error does not echo the input"
    );
}

#[tokio::test]
async fn unknown_mode_still_reports_the_rest_of_the_body() {
    let app = spawn_app().await;
    let mut body = coaching_body("diagnose_growth");
    body["mode"] = json!("make_coffee");
    body["messages"] = json!([]);
    let err: Value = app
        .post_json(CALL, &body, &[])
        .await
        .json()
        .await
        .expect("json");
    let paths = detail_paths(&err);
    assert!(
        paths.contains(&"/mode".to_owned()) && paths.contains(&"/messages".to_owned()),
        "{paths:?}"
    );
}

#[tokio::test]
async fn unknown_agent_is_404() {
    let app = spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/bob/call",
            &coaching_body("diagnose_growth"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"]["code"],
        "unknown_agent"
    );
}

#[tokio::test]
async fn a_valid_mode_the_coach_does_not_offer_lists_the_coachs_modes() {
    let app = spawn_app().await;
    let r = app
        .post_json(
            "/api/v1/agents/oak/call",
            &coaching_body("design_offer"),
            &[],
        )
        .await;
    assert_eq!(r.status(), 422);
    let err: Value = r.json().await.expect("json");
    assert_eq!(err["error"]["code"], "mode_not_offered");
    let offered: Vec<&str> = err["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert_eq!(
        offered,
        [
            "diagnose_growth",
            "plan_capacity",
            "draft_sop",
            "audit_function"
        ]
    );
}

#[tokio::test]
async fn malformed_json_is_400_and_wrong_content_type_is_415() {
    let app = spawn_app().await;
    for path in [CALL, "/api/v1/actions/review-request/call"] {
        let r = app
            .post_raw(path, Some("application/json"), b"{\"mode\": ".to_vec())
            .await;
        assert_eq!(r.status(), 400, "{path}");
        assert_eq!(
            r.json::<Value>().await.expect("json")["error"]["code"],
            "invalid_json"
        );
        let body = coaching_body("diagnose_growth").to_string().into_bytes();
        for ct in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ] {
            let r = app.post_raw(path, ct, body.clone()).await;
            assert_eq!(r.status(), 415, "{path} {ct:?}");
            assert_eq!(
                r.json::<Value>().await.expect("json")["error"]["code"],
                "unsupported_media_type"
            );
        }
        let r = app
            .post_raw(
                path,
                Some("application/json; charset=utf-8"),
                b"[]".to_vec(),
            )
            .await;
        assert_eq!(
            r.status(),
            422,
            "charset parameter is accepted; an array is not an object"
        );
    }
}

#[tokio::test]
async fn bodies_over_2_mib_are_413_with_or_without_a_length() {
    let app = spawn_app().await;
    let mut body = coaching_body("diagnose_growth");
    body["padding"] = json!("x".repeat(2 * 1024 * 1024));
    let r = app.post_json(CALL, &body, &[]).await;
    assert_eq!(r.status(), 413);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"]["code"],
        "payload_too_large"
    );
    // Chunked: no Content-Length, the limit is enforced while reading.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..40).map(|_| Ok(vec![b' '; 64 * 1024])).collect();
    let stream = futures_stream(chunks);
    let r = app
        .client
        .post(app.url(CALL))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 413);
}

fn futures_stream(
    chunks: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    tokio_stream::iter(chunks)
}

#[tokio::test]
async fn idempotency_key_must_be_1_to_255_printable_ascii() {
    let app = spawn_app().await;
    let body = coaching_body("diagnose_growth");
    let long = "k".repeat(256);
    for key in ["", long.as_str()] {
        let r = app
            .post_json(CALL, &body, &[("idempotency-key", key)])
            .await;
        assert_eq!(r.status(), 422, "key of {} chars", key.len());
        assert_eq!(
            r.json::<Value>().await.expect("json")["error"]["code"],
            "invalid_idempotency_key"
        );
    }
    let ok = "k".repeat(255);
    let r = app
        .post_json(CALL, &body, &[("idempotency-key", ok.as_str())])
        .await;
    assert_eq!(r.status(), 402);
}

/// (what, pointer, value or None, expected path) for the review request (CONTRACT 9).
fn action_cases() -> Vec<(&'static str, &'static str, Option<Value>, &'static str)> {
    vec![
        ("business missing", "/business", None, "/business"),
        (
            "business.name empty",
            "/business/name",
            Some(json!("")),
            "/business/name",
        ),
        (
            "business.name over 40",
            "/business/name",
            Some(s(41)),
            "/business/name",
        ),
        (
            "review_url not https",
            "/business/review_url",
            Some(json!("http://example.com/r")),
            "/business/review_url",
        ),
        (
            "review_url over 500",
            "/business/review_url",
            Some(json!(format!("https://example.com/{}", "a".repeat(500)))),
            "/business/review_url",
        ),
        (
            "timezone missing",
            "/business/timezone",
            None,
            "/business/timezone",
        ),
        (
            "contact over 100",
            "/business/contact",
            Some(s(101)),
            "/business/contact",
        ),
        (
            "phone not E.164",
            "/customer/phone",
            Some(json!("305-555-0142")),
            "/customer/phone",
        ),
        (
            "first_name over 30",
            "/customer/first_name",
            Some(s(31)),
            "/customer/first_name",
        ),
        (
            "state not two capitals",
            "/customer/state",
            Some(json!("Florida")),
            "/customer/state",
        ),
        ("consent missing", "/consent", None, "/consent"),
        (
            "consent.method unknown",
            "/consent/method",
            Some(json!("telepathy")),
            "/consent/method",
        ),
        (
            "consent.captured_at not a date-time",
            "/consent/captured_at",
            Some(json!("last tuesday")),
            "/consent/captured_at",
        ),
        (
            "consent.source empty",
            "/consent/source",
            Some(json!("")),
            "/consent/source",
        ),
        (
            "disclosure_text over 1000",
            "/consent/disclosure_text",
            Some(s(1001)),
            "/consent/disclosure_text",
        ),
        (
            "template over 320",
            "/message/template",
            Some(s(321)),
            "/message/template",
        ),
        (
            "send_at not a date-time",
            "/send_at",
            Some(json!("tomorrow")),
            "/send_at",
        ),
        (
            "follow_up.after_hours under 24",
            "/follow_up/after_hours",
            Some(json!(23)),
            "/follow_up/after_hours",
        ),
        (
            "follow_up.after_hours over 336",
            "/follow_up/after_hours",
            Some(json!(337)),
            "/follow_up/after_hours",
        ),
        (
            "min_days over 365",
            "/min_days_since_last_request",
            Some(json!(366)),
            "/min_days_since_last_request",
        ),
        ("unknown key", "/priority", Some(json!("high")), "/priority"),
    ]
}

#[tokio::test]
async fn review_request_bodies_are_validated_before_any_challenge() {
    let app = spawn_app().await;
    for (what, pointer, value, expected) in action_cases() {
        let mut body = action_body();
        match value {
            Some(v) => set_pointer(&mut body, pointer, v),
            None => remove_pointer(&mut body, pointer),
        }
        let r = app
            .post_json("/api/v1/actions/review-request/call", &body, &[])
            .await;
        assert_eq!(r.status(), 422, "{what}");
        let err: Value = r.json().await.expect("json");
        let paths = detail_paths(&err);
        assert!(
            paths.iter().any(|p| p == expected),
            "{what}: expected {expected} in {paths:?}"
        );
    }
    let r = app
        .post_json("/api/v1/actions/other-thing/call", &action_body(), &[])
        .await;
    assert_eq!(r.status(), 404);
}
