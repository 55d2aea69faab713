//! The review-request action's domain logic (CONTRACT 9): pure functions of their inputs and the
//! instant they are given, no I/O, and [`service`], the one owner of a request's state, which
//! reads and writes the database. The API runs [`validate_request`] after the JSON Schema and
//! before any 402, so a request we would refuse is never charged.

pub mod consent;
pub mod encoding;
pub mod event_kind;
pub mod keywords;
pub mod links;
pub mod message;
pub mod message_status;
pub mod phone;
pub mod quiet_hours;

pub mod status;

pub use consent::{check as check_consent, check_send_at};
pub use encoding::Encoding;
pub use event_kind::EventKind;
pub use keywords::{Keyword, classify, reads_as_opt_out};
pub use links::check_review_url;
pub use message::{Rendered, render, render_follow_up};
pub use message_status::MessageStatus;
pub use phone::{UsPhone, state_for_area_code, us_state};
pub use quiet_hours::{
    Opening, next_opening, next_opening_all, parse_zone, recipient_state, recipient_states,
    window_on, window_on_all, zone,
};
pub use status::ReviewStatus;

use crate::schema::Violation;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The code each problem of a review request carries in a 422's `details` (issue 10). The 422's
/// own code is the one clients know for a lone problem (`consent_invalid` for a consent problem,
/// `validation_failed` for any other) and `invalid_request` for several; the list is documented
/// in the README, the OpenAPI `Error` schema, the guide and the skill file.
pub mod codes {
    /// A schema violation, or a rule with no code of its own (a blank name, a bad `send_at`).
    pub const VALIDATION_FAILED: &str = "validation_failed";
    /// Consent evidence that is missing, malformed, of an unknown method or without a source.
    pub const CONSENT_INVALID: &str = "consent_invalid";
    /// `consent.captured_at` is in the future.
    pub const CONSENT_IN_FUTURE: &str = "consent_in_future";
    /// `consent.captured_at` is older than 18 months.
    pub const CONSENT_TOO_OLD: &str = "consent_too_old";
    /// `send_at` is in the past or more than 30 days ahead.
    pub const SEND_AT_OUT_OF_RANGE: &str = "send_at_out_of_range";
    /// The recipient's number is not a `+1` number.
    pub const PHONE_NOT_US: &str = "phone_not_us";
    /// Not an IANA time zone.
    pub const INVALID_TIME_ZONE: &str = "invalid_time_zone";
    /// `review_url` is not a plain https page on a public domain (or is one of our own links).
    pub const REVIEW_URL_INVALID: &str = "review_url_invalid";
    /// A public link shortener, in `review_url` or in the text.
    pub const LINK_SHORTENER: &str = "link_shortener";
    /// A web address in the template or a name, however disguised; only `{review_link}` links.
    pub const LINK_NOT_ALLOWED: &str = "link_not_allowed";
    /// Letters from another alphabet made to look Latin (a mixed word, a Cyrillic STOP).
    pub const LOOKALIKE_CHARACTERS: &str = "lookalike_characters";
    /// Control or invisible characters.
    pub const CONTROL_CHARACTERS: &str = "control_characters";
    /// An unknown or unclosed token, or a required token missing.
    pub const TEMPLATE_INVALID: &str = "template_invalid";
    /// The rendered message is over 320 characters.
    pub const TEMPLATE_TOO_LONG: &str = "template_too_long";

    /// Every code, for the documents that list them.
    pub const ALL: [&str; 14] = [
        VALIDATION_FAILED,
        CONSENT_INVALID,
        CONSENT_IN_FUTURE,
        CONSENT_TOO_OLD,
        SEND_AT_OUT_OF_RANGE,
        PHONE_NOT_US,
        INVALID_TIME_ZONE,
        REVIEW_URL_INVALID,
        LINK_SHORTENER,
        LINK_NOT_ALLOWED,
        LOOKALIKE_CHARACTERS,
        CONTROL_CHARACTERS,
        TEMPLATE_INVALID,
        TEMPLATE_TOO_LONG,
    ];
}

/// Length of the tracked-link token (128 random bits, base64url without padding).
pub const LINK_TOKEN_CHARS: usize = 22;

/// The tracked link as the recipient sees it: `{public_base_url}/r/{token}`.
pub fn tracked_link(public_base_url: &str, token: &str) -> String {
    format!(
        "{}{}",
        public_base_url.trim_end_matches('/'),
        crate::catalog::paths::review_link(token)
    )
}

/// Every problem the schema cannot see, each with a JSON-pointer path. Expects a body that has
/// passed the request schema, but never panics on one that has not (missing fields are skipped
/// or reported, never unwrapped).
pub fn validate_request(body: &Value, now: DateTime<Utc>, public_base_url: &str) -> Vec<Violation> {
    let str_at = |pointer: &str| body.pointer(pointer).and_then(Value::as_str);
    let mut out = Vec::new();

    out.extend(check_consent(
        body.get("consent").unwrap_or(&Value::Null),
        now,
    ));
    out.extend(check_send_at(str_at("/send_at"), now));

    if let Some(url) = str_at("/business/review_url") {
        out.extend(check_review_url(url));
        if points_at_us(url, public_base_url) {
            out.push(
                Violation::new(
                    "/business/review_url",
                    "must be the review page itself, not one of our tracked links",
                )
                .with_code(codes::REVIEW_URL_INVALID),
            );
        }
    }
    for pointer in ["/business/timezone", "/customer/timezone"] {
        if let Some(name) = str_at(pointer)
            && let Err(why) = quiet_hours::parse_zone(name)
        {
            out.push(Violation::new(pointer, why).with_code(codes::INVALID_TIME_ZONE));
        }
    }
    if let Some(raw) = str_at("/customer/phone")
        && let Err(why) = UsPhone::parse(raw)
    {
        let v = Violation::new("/customer/phone", why);
        out.push(if why == phone::NOT_US {
            v.with_code(codes::PHONE_NOT_US)
        } else {
            v
        });
    }
    if let Some(state) = str_at("/customer/state")
        && us_state(state).is_none()
    {
        out.push(Violation::new(
            "/customer/state",
            "must be the two-letter code of a US state or DC (e.g. FL)",
        ));
    }

    // Names go into the SMS verbatim: a blank one reads badly, a line break or control character
    // could disguise the message.
    let first_name = str_at("/customer/first_name").unwrap_or_default();
    let business_name = str_at("/business/name").unwrap_or_default();
    for (pointer, value) in [
        ("/customer/first_name", first_name),
        ("/business/name", business_name),
    ] {
        if value.trim().is_empty() {
            out.push(Violation::new(pointer, "must not be blank"));
        } else if value.chars().any(char::is_control) {
            out.push(
                Violation::new(
                    pointer,
                    "must not contain line breaks or control characters",
                )
                .with_code(codes::CONTROL_CHARACTERS),
            );
        }
        // A name is texted as written: it may not smuggle in a link or a disguise either.
        for found in message::screen::problems(value) {
            if !found.message.contains("control character") {
                out.push(found.at(pointer));
            }
        }
    }

    // Render with a stand-in link of the real length, so the length limit is exact.
    let link = tracked_link(public_base_url, &"x".repeat(LINK_TOKEN_CHARS));
    if let Err(problems) = render(
        str_at("/message/template"),
        first_name,
        business_name,
        &link,
    ) {
        out.extend(problems);
    }
    out
}

/// Whether `url` is on our own public host (a redirect loop through `/r/`).
fn points_at_us(url: &str, public_base_url: &str) -> bool {
    let host = |u: &str| {
        url::Url::parse(u).ok().and_then(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
    };
    matches!((host(url), host(public_base_url)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests;
