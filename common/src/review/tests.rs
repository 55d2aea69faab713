use super::*;
use serde_json::json;

const BASE: &str = "https://grove.example";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2025-06-10T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn valid() -> Value {
    json!({
        "business": {
            "name": "Maria's Salon",
            "review_url": "https://search.google.com/local/writereview?placeid=ChIJxxxx",
            "timezone": "America/New_York"
        },
        "customer": {"phone": "+13055550142", "first_name": "Sarah", "timezone": "America/Chicago", "state": "FL"},
        "consent": {"method": "web_form_checkbox", "captured_at": "2025-05-02T14:03:11-04:00",
                    "source": "https://mariasalon.example/book"},
        "message": {"template": "Hi {first_name}, thanks for visiting {business_name}! {review_link}"},
        "send_at": "2025-06-11T15:00:00Z"
    })
}

fn paths(v: &[Violation]) -> Vec<&str> {
    v.iter().map(|v| v.path.as_str()).collect()
}

#[test]
fn a_valid_request_has_no_violations() {
    assert_eq!(validate_request(&valid(), now(), BASE), vec![]);
    let mut minimal = valid();
    for (object, key) in [
        ("customer", "timezone"),
        ("customer", "state"),
        ("", "message"),
        ("", "send_at"),
    ] {
        let target = if object.is_empty() {
            &mut minimal
        } else {
            &mut minimal[object]
        };
        target.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(validate_request(&minimal, now(), BASE), vec![]);
}

#[test]
fn every_problem_is_listed_with_its_pointer() {
    let body = json!({
        "business": {"name": "  ", "review_url": "https://bit.ly/abc", "timezone": "Eastern"},
        "customer": {"phone": "+442071838750", "first_name": "Sa\nrah",
                     "timezone": "America/Chicgo", "state": "PR"},
        "consent": {"method": "web_form_checkbox", "captured_at": "2022-01-01T00:00:00Z",
                    "source": "kiosk"},
        "message": {"template": "Hello {nickname}"},
        "send_at": "2025-08-01T00:00:00Z"
    });
    let v = validate_request(&body, now(), BASE);
    let p = paths(&v);
    for expected in [
        "/consent/captured_at",
        "/send_at",
        "/business/review_url",
        "/business/timezone",
        "/customer/timezone",
        "/customer/phone",
        "/customer/state",
        "/customer/first_name",
        "/business/name",
        "/message/template",
    ] {
        assert!(p.contains(&expected), "{expected} missing from {p:?}");
    }
    // The template has an unknown token and lacks both required ones.
    assert_eq!(
        p.iter().filter(|p| **p == "/message/template").count(),
        3,
        "{v:?}"
    );
}

#[test]
fn the_length_limit_counts_the_real_tracked_link() {
    let link_len = tracked_link(BASE, &"x".repeat(LINK_TOKEN_CHARS)).len();
    assert_eq!(link_len, BASE.len() + 3 + 22);
    // "Acme" + " " + link + " " + filler + " Reply STOP to opt out." is exactly 320.
    let filler = 320 - 4 - 1 - link_len - 1 - 23;
    let mut body = valid();
    body["business"]["name"] = json!("Acme");
    body["message"]["template"] = json!(format!(
        "{{business_name}} {{review_link}} {}",
        "z".repeat(filler)
    ));
    assert_eq!(validate_request(&body, now(), BASE), vec![]);
    // A longer public URL makes the same template too long.
    let v = validate_request(&body, now(), "https://reviews.grove.example");
    assert_eq!(paths(&v), ["/message/template"]);
    assert!(v[0].message.contains("328 characters"), "{v:?}");
}

#[test]
fn a_review_url_pointing_back_at_our_redirect_is_refused() {
    let mut body = valid();
    body["business"]["review_url"] = json!("https://grove.example/r/abc");
    assert_eq!(
        paths(&validate_request(&body, now(), BASE)),
        ["/business/review_url"]
    );
}

#[test]
fn a_body_that_skipped_the_schema_does_not_panic() {
    let v = validate_request(&json!({"consent": 5, "customer": []}), now(), BASE);
    let p = paths(&v);
    assert!(
        p.contains(&"/consent/captured_at") && p.contains(&"/business/name"),
        "{p:?}"
    );
    assert!(!validate_request(&Value::Null, now(), BASE).is_empty());
}

#[test]
fn tracked_link_tolerates_a_trailing_slash() {
    assert_eq!(
        tracked_link("https://g.example/", "tok"),
        "https://g.example/r/tok"
    );
}

#[test]
fn the_fixture_passes_the_published_schema_so_these_checks_are_the_layer_after_it() {
    let registry = crate::schema::SchemaRegistry::load().unwrap();
    let schema = &registry.action().request;
    assert_eq!(schema.violations(&valid()), vec![]);
    // Shape-valid but stale consent and a shortener: only the domain checks catch them.
    let mut body = valid();
    body["consent"]["captured_at"] = json!("2020-01-01T00:00:00Z");
    body["business"]["review_url"] = json!("https://bit.ly/abc");
    assert_eq!(schema.violations(&body), vec![]);
    assert_eq!(
        paths(&validate_request(&body, now(), BASE)),
        ["/consent/captured_at", "/business/review_url"]
    );
}
