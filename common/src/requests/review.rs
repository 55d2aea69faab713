//! The body of a review request (`POST /api/v1/actions/review-request/call`).

use super::Timestamp;
use crate::review::phone::UsPhone;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Hours after delivery when the one reminder goes, unless the body says otherwise.
pub const DEFAULT_FOLLOW_UP_AFTER_HOURS: u16 = 72;

/// Ask one customer of a business for a review by SMS, on the evidence of their consent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewRequestBody {
    pub business: Business,
    pub customer: Customer,
    pub consent: Consent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageSpec>,
    /// When to send (at most 30 days ahead); absent: now. Quiet hours may defer it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<FollowUp>,
    /// Refuse (409 `cooldown_active`) if this phone got a request within this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_days_since_last_request: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Business {
    pub name: String,
    pub review_url: String,
    /// IANA time zone: the recipient's, unless the customer names their own.
    pub timezone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Customer {
    pub phone: UsPhone,
    pub first_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Two-letter US state code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The evidence of the customer's consent to the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consent {
    pub method: String,
    pub captured_at: Timestamp,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disclosure_text: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowUp {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_hours: Option<u16>,
}

impl ReviewRequestBody {
    /// The message template, if the caller wrote one (else the default message).
    pub fn template(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.template.as_deref())
    }

    /// The requested send time, or `now` when it is absent or already past.
    pub fn send_at(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.send_at
            .as_ref()
            .map(Timestamp::instant)
            .filter(|t| *t > now)
            .unwrap_or(now)
    }

    /// One reminder unless the caller turned it off.
    pub fn follow_up_enabled(&self) -> bool {
        self.follow_up
            .as_ref()
            .and_then(|f| f.enabled)
            .unwrap_or(true)
    }

    pub fn follow_up_after_hours(&self) -> u16 {
        self.follow_up
            .as_ref()
            .and_then(|f| f.after_hours)
            .unwrap_or(DEFAULT_FOLLOW_UP_AFTER_HOURS)
    }

    /// The cooldown asked for, in days (0: none).
    pub fn cooldown_days(&self) -> i64 {
        self.min_days_since_last_request.map_or(0, i64::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::parse;
    use serde_json::json;

    fn full() -> serde_json::Value {
        json!({
            "business": {"name": "Harbor Physio", "review_url": "https://example.com/review",
                         "timezone": "America/New_York", "contact": "+13055550100"},
            "customer": {"phone": "+13055550142", "first_name": "Dana",
                         "timezone": "America/Chicago", "state": "FL"},
            "consent": {"method": "web_form_checkbox", "captured_at": "2026-10-02T15:04:05.000-04:00",
                        "source": "intake form", "disclosure_text": "We may text you."},
            "message": {"template": "Hi {first_name}, review {business_name}: {review_link}"},
            "send_at": "2026-10-03T10:00:00Z",
            "follow_up": {"enabled": false, "after_hours": 48},
            "min_days_since_last_request": 30,
        })
    }

    #[test]
    fn a_review_body_serialises_back_as_it_was_sent() {
        let typed: ReviewRequestBody = parse(full()).expect("typed");
        assert_eq!(serde_json::to_value(&typed).expect("json"), full());
        let minimal = json!({
            "business": {"name": "B", "review_url": "https://example.com/r", "timezone": "America/New_York"},
            "customer": {"phone": "+13055550142", "first_name": "D"},
            "consent": {"method": "paper_signature", "captured_at": "2026-10-02T15:04:05Z", "source": "desk"},
            "follow_up": {},
        });
        let typed: ReviewRequestBody = parse(minimal.clone()).expect("typed");
        assert_eq!(serde_json::to_value(&typed).expect("json"), minimal);
    }

    #[test]
    fn defaults_fill_what_the_body_leaves_out() {
        let mut body = full();
        body.as_object_mut().expect("object").remove("follow_up");
        body.as_object_mut()
            .expect("object")
            .remove("min_days_since_last_request");
        let typed: ReviewRequestBody = parse(body).expect("typed");
        assert!(typed.follow_up_enabled());
        assert_eq!(typed.follow_up_after_hours(), 72);
        assert_eq!(typed.cooldown_days(), 0);
        let typed: ReviewRequestBody = parse(full()).expect("typed");
        assert!(!typed.follow_up_enabled());
        assert_eq!(typed.cooldown_days(), 30);
        assert_eq!(typed.customer.phone.e164(), "+13055550142");
    }

    #[test]
    fn a_past_send_time_means_now() {
        let typed: ReviewRequestBody = parse(full()).expect("typed");
        let after = DateTime::parse_from_rfc3339("2026-10-04T00:00:00Z")
            .expect("instant")
            .with_timezone(&Utc);
        assert_eq!(typed.send_at(after), after);
        let before = after - chrono::Duration::days(2);
        assert_eq!(
            typed.send_at(before).to_rfc3339(),
            "2026-10-03T10:00:00+00:00"
        );
    }

    #[test]
    fn a_body_the_type_cannot_hold_is_one_violation_not_a_panic() {
        let mut body = full();
        body["customer"]["phone"] = json!("+447700900123");
        let v = parse::<ReviewRequestBody>(body).expect_err("not a US number");
        assert_eq!(v.path, "");
        assert!(v.message.contains("+1"), "{}", v.message);
    }
}
