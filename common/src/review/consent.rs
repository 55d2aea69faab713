//! Consent evidence and the requested send time: the checks a JSON Schema cannot make because
//! they depend on the clock (CONTRACT 9). The sender bears the burden of proving consent, so stale
//! or impossible evidence is refused before any payment is asked for.

use super::codes;
use crate::schema::Violation;
use chrono::{DateTime, FixedOffset, Months, TimeDelta, Utc};
use serde_json::Value;

/// The consent methods that can evidence prior express written consent (sms.md 3.1, 6.1).
pub const METHODS: [&str; 6] = [
    "web_form_checkbox",
    "paper_signature",
    "pos_terminal",
    "keyword_opt_in",
    "esign_document",
    "verbal_recorded",
];

/// Clocks disagree; a timestamp this far ahead of ours is still taken as "now".
pub const CLOCK_SKEW: TimeDelta = TimeDelta::minutes(5);
/// Consent older than this is too stale to rely on.
pub const MAX_CONSENT_AGE_MONTHS: u32 = 18;
/// How far ahead `send_at` may be.
pub const MAX_SEND_AHEAD: TimeDelta = TimeDelta::days(30);

/// Problems with `consent` at `now`; paths start at `/consent`.
pub fn check(consent: &Value, now: DateTime<Utc>) -> Vec<Violation> {
    let mut out = Vec::new();
    match consent.get("method").and_then(Value::as_str) {
        Some(m) if METHODS.contains(&m) => {}
        Some(_) => out.push(Violation::new(
            "/consent/method",
            format!("must be one of {}", METHODS.join(", ")),
        )),
        None => out.push(Violation::new("/consent/method", "is required")),
    }
    match consent.get("source").and_then(Value::as_str) {
        Some(s) if !s.trim().is_empty() => {}
        _ => out.push(Violation::new(
            "/consent/source",
            "must say where and how consent was captured",
        )),
    }
    const AT: &str = "/consent/captured_at";
    let Some(raw) = consent.get("captured_at").and_then(Value::as_str) else {
        out.push(Violation::new(AT, "is required"));
        return out;
    };
    let Some(at) = parse_rfc3339(raw) else {
        out.push(Violation::new(
            AT,
            "must be an RFC 3339 timestamp with an offset, e.g. 2025-05-02T14:03:11-04:00",
        ));
        return out;
    };
    let at = at.with_timezone(&Utc);
    if at > now + CLOCK_SKEW {
        out.push(Violation::new(AT, "is in the future").with_code(codes::CONSENT_IN_FUTURE));
    }
    // Calendar months, so "18 months ago" means the same day of the month.
    let oldest = now.checked_sub_months(Months::new(MAX_CONSENT_AGE_MONTHS));
    if oldest.is_none_or(|oldest| at < oldest) {
        out.push(
            Violation::new(
                AT,
                format!("is older than {MAX_CONSENT_AGE_MONTHS} months; capture consent again"),
            )
            .with_code(codes::CONSENT_TOO_OLD),
        );
    }
    out
}

/// Problems with the optional `send_at` at `now`; the path is `/send_at`.
pub fn check_send_at(send_at: Option<&str>, now: DateTime<Utc>) -> Vec<Violation> {
    const AT: &str = "/send_at";
    let Some(raw) = send_at else {
        return Vec::new();
    };
    let Some(at) = parse_rfc3339(raw) else {
        return vec![Violation::new(
            AT,
            "must be an RFC 3339 timestamp with an offset, e.g. 2025-05-02T14:03:11-04:00",
        )];
    };
    let at = at.with_timezone(&Utc);
    if at > now + MAX_SEND_AHEAD {
        return vec![
            Violation::new(AT, "must be at most 30 days ahead")
                .with_code(codes::SEND_AT_OUT_OF_RANGE),
        ];
    }
    if at < now - CLOCK_SKEW {
        return vec![
            Violation::new(AT, "is in the past; omit it to send now")
                .with_code(codes::SEND_AT_OUT_OF_RANGE),
        ];
    }
    Vec::new()
}

/// RFC 3339 with an explicit offset (`Z` or `±hh:mm`); a bare local time is refused because its
/// instant is unknowable.
fn parse_rfc3339(raw: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(raw.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2025-06-10T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn consent(captured_at: &str) -> Value {
        json!({"method": "web_form_checkbox", "captured_at": captured_at,
               "source": "https://salon.example/book"})
    }

    fn paths(v: &[Violation]) -> Vec<&str> {
        v.iter().map(|v| v.path.as_str()).collect()
    }

    #[test]
    fn recent_consent_with_an_offset_passes() {
        assert_eq!(check(&consent("2025-05-02T14:03:11-04:00"), now()), vec![]);
        assert_eq!(
            check(&consent("2025-06-10T12:04:00Z"), now()),
            vec![],
            "within skew"
        );
    }

    #[test]
    fn future_consent_beyond_the_skew_is_refused() {
        let v = check(&consent("2025-06-10T12:06:00Z"), now());
        assert_eq!(paths(&v), ["/consent/captured_at"]);
        assert!(v[0].message.contains("future"), "{v:?}");
    }

    #[test]
    fn consent_older_than_eighteen_months_is_refused() {
        assert_eq!(
            check(&consent("2023-12-10T12:00:00Z"), now()),
            vec![],
            "exactly 18 months"
        );
        let v = check(&consent("2023-12-10T11:59:59Z"), now());
        assert_eq!(paths(&v), ["/consent/captured_at"]);
        assert!(v[0].message.contains("18 months"), "{v:?}");
    }

    #[test]
    fn timestamps_without_an_offset_or_malformed_are_refused() {
        for raw in [
            "2025-05-02T14:03:11",
            "2025-05-02",
            "yesterday",
            "2025-13-02T14:03:11Z",
        ] {
            let v = check(&consent(raw), now());
            assert_eq!(paths(&v), ["/consent/captured_at"], "{raw}");
        }
    }

    #[test]
    fn unknown_method_blank_source_and_missing_fields_are_each_reported() {
        let v = check(
            &json!({"method": "carrier_pigeon", "captured_at": "2025-05-02T14:03:11Z", "source": "  "}),
            now(),
        );
        assert_eq!(paths(&v), ["/consent/method", "/consent/source"]);
        let v = check(&json!({}), now());
        assert_eq!(
            paths(&v),
            ["/consent/method", "/consent/source", "/consent/captured_at"]
        );
        assert_eq!(paths(&check(&Value::Null, now())).len(), 3);
    }

    #[test]
    fn send_at_is_optional_within_thirty_days_and_not_in_the_past() {
        assert_eq!(check_send_at(None, now()), vec![]);
        assert_eq!(check_send_at(Some("2025-07-10T12:00:00Z"), now()), vec![]);
        assert_eq!(
            check_send_at(Some("2025-06-10T11:57:00Z"), now()),
            vec![],
            "skew"
        );
        for raw in [
            "2025-07-10T12:00:01Z",
            "2025-06-10T11:54:00Z",
            "2025-06-11T09:00:00",
        ] {
            let v = check_send_at(Some(raw), now());
            assert_eq!(paths(&v), ["/send_at"], "{raw}");
        }
    }
}
