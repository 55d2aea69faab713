//! The review-request action's domain logic (CONTRACT 9): pure functions of their inputs and the
//! instant they are given, no I/O. The API runs [`validate_request`] after the JSON Schema and
//! before any 402, so a request we would refuse is never charged.

pub mod consent;
pub mod encoding;
pub mod keywords;
pub mod links;
pub mod message;
pub mod phone;
pub mod quiet_hours;

pub use consent::{check as check_consent, check_send_at};
pub use encoding::Encoding;
pub use keywords::{Keyword, classify, reads_as_opt_out};
pub use links::check_review_url;
pub use message::{Rendered, render, render_follow_up};
pub use phone::{UsPhone, state_for_area_code, us_state};
pub use quiet_hours::{
    Opening, next_opening, next_opening_all, parse_zone, recipient_state, recipient_states,
    window_on, window_on_all, zone,
};

use crate::schema::Violation;
use chrono::{DateTime, Utc};
use serde_json::Value;

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
            out.push(Violation::new(
                "/business/review_url",
                "must be the review page itself, not one of our tracked links",
            ));
        }
    }
    for pointer in ["/business/timezone", "/customer/timezone"] {
        if let Some(name) = str_at(pointer)
            && let Err(why) = quiet_hours::parse_zone(name)
        {
            out.push(Violation::new(pointer, why));
        }
    }
    if let Some(raw) = str_at("/customer/phone")
        && let Err(why) = UsPhone::parse(raw)
    {
        out.push(Violation::new("/customer/phone", why));
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
            out.push(Violation::new(
                pointer,
                "must not contain line breaks or control characters",
            ));
        }
        // A name is texted as written: it may not smuggle in a link or a disguise either.
        for problem in message::screen::problems(value) {
            if !problem.contains("control character") {
                out.push(Violation::new(pointer, problem));
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
