//! The free sandbox's answer to a review request: what the paid call would return for this very
//! body (the names, the recipient's zone and quiet hours, the tracked link on `PUBLIC_BASE_URL`),
//! built without storing, sending or charging anything. Only a body that passed
//! [`super::pre_payment_checks`] gets here.

use chrono::{DateTime, Utc};
use grove_common::{
    db::reviews::rfc3339,
    requests::ReviewRequestBody,
    review::{self, LINK_TOKEN_CHARS, message, quiet_hours},
    schema::Violation,
};
use serde_json::{Value, json};

/// Stands in for the tracked request's id (`rr_` and at least 16 characters, as the schema asks).
pub const SANDBOX_ID: &str = "rr_sandbox_0000000000000000";

/// The stand-in link token: as long as a real one, so the message's length and segments are
/// those the recipient would get.
fn link_token() -> String {
    format!("{:0<LINK_TOKEN_CHARS$}", "sandbox")
}

/// The sample tracked request for `body`: `scheduled` at the requested time (or now), or
/// `deferred_quiet_hours` to the recipient's next sending window when the time falls outside it.
pub fn sample(
    body: &ReviewRequestBody,
    now: DateTime<Utc>,
    public_base_url: &str,
) -> Result<Value, Vec<Violation>> {
    let base = public_base_url.trim_end_matches('/');
    let link = review::tracked_link(base, &link_token());
    let rendered = message::render(
        body.template(),
        &body.customer.first_name,
        &body.business.name,
        &link,
    )?;
    let zone = quiet_hours::zone(body.customer.timezone.as_deref(), &body.business.timezone)
        .map_err(|why| {
            vec![
                Violation::new("/business/timezone", why)
                    .with_code(review::codes::INVALID_TIME_ZONE),
            ]
        })?;
    let send_at = body.send_at(now);
    let states =
        quiet_hours::recipient_states(body.customer.state.as_deref(), &body.customer.phone);
    let (status, scheduled) = match quiet_hours::next_opening_all(send_at, zone, &states) {
        quiet_hours::Opening::Now { .. } => ("scheduled", send_at),
        quiet_hours::Opening::Later { opens_at, .. } => ("deferred_quiet_hours", opens_at),
    };
    let follow_up = body.follow_up_enabled();
    let self_url = format!(
        "{base}{}",
        grove_common::catalog::paths::review_request(SANDBOX_ID)
    );
    Ok(json!({
        "id": SANDBOX_ID,
        "status": status,
        "created_at": rfc3339(now),
        "scheduled_send_at": rfc3339(scheduled),
        "message": {
            "body": rendered.body,
            "encoding": rendered.encoding.as_str(),
            "segments": rendered.segments,
        },
        "follow_up": {"enabled": follow_up, "due_at": null},
        "links": {"self": self_url, "cancel": format!("{self_url}/cancel")},
        "receipt": {"id": "sandbox", "url": "/docs/actions#sandbox", "expires_at": null},
        "failure": null,
        "sandbox": true,
    }))
}
