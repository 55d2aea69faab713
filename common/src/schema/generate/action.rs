//! The review request action (CONTRACT 9): its request body and its 200 response.

use super::DRAFT;
use super::coaching::{receipt, required_but_sandbox, sandbox_flag};
use super::node::{Node, int, int_range, ne, obj, obj_with, one_of, s, sm};
use crate::{
    catalog::REVIEW_REQUEST,
    db::reviews::status,
    review::{consent, encoding::Encoding},
};
use serde_json::{Value, json};

pub fn request() -> Value {
    let business = obj_with(
        json!({
            "name": ne().set("maxLength", 40).d("Appears in every message."),
            "review_url": sm(500)
                .d("https URL of the review page; public link shorteners are refused.")
                .set("format", "uri")
                .set("pattern", "^https://"),
            "timezone": ne().set("maxLength", 64).d("IANA time zone, e.g. America/Chicago."),
            "contact": sm(100).d("Phone or email for HELP replies."),
        }),
        &["name", "review_url", "timezone"],
    );
    let customer = obj_with(
        json!({
            "phone": s()
                .d("E.164 +1 (US) number: +1, a 3-digit area code and a 7-digit number, neither \
                    starting with 0 or 1, e.g. +13055550142. v1 serves only +1 numbers.")
                .set("pattern", "^\\+1[2-9][0-9]{2}[2-9][0-9]{6}$"),
            "first_name": ne().set("maxLength", 30),
            "timezone": ne().set("maxLength", 64).d("IANA time zone; defaults to the business's."),
            "state": s().d("Two-letter US state code.").set("pattern", "^[A-Z]{2}$"),
        }),
        &["phone", "first_name"],
    );
    let consent = obj_with(
        json!({
            "method": one_of(&consent::METHODS),
            "captured_at": s()
                .d("RFC 3339 with offset; not in the future, not older than 18 months.")
                .set("format", "date-time"),
            "source": ne().set("maxLength", 500).d("Where and how consent was captured."),
            "disclosure_text": sm(1000),
        }),
        &["method", "captured_at", "source"],
    )
    .d("The customer's consent to receive the SMS.");
    let message = obj_with(
        json!({
            "template": ne().set("maxLength", 320).d(
                "Tokens {first_name}, {business_name}, {review_link} only; must use \
                 {business_name} and {review_link}; the opt-out sentence is appended when \
                 missing; rendered message at most 320 characters.",
            ),
        }),
        &[],
    );
    let follow_up = obj_with(
        json!({
            "enabled": {"type": "boolean", "default": true},
            "after_hours": int_range(24, 336).d("Hours after delivery.").set("default", 72),
        }),
        &[],
    )
    .d(
        "One reminder at most; skipped once the link is clicked, the request is cancelled or the \
        phone opts out.",
    );
    json!({
        "$schema": DRAFT,
        "title": format!("Grove action request: {}", REVIEW_REQUEST.id),
        "description": format!(
            "Request body of POST {}: ask one customer for a review by SMS. Consent, the opt-out \
             list and the cooldown are checked before any payment is asked for.",
            REVIEW_REQUEST.call_path()
        ),
        "type": "object",
        "required": ["business", "customer", "consent"],
        "properties": {
            "business": business,
            "customer": customer,
            "consent": consent,
            "message": message,
            "send_at": s()
                .d("RFC 3339, at most 30 days ahead; default now. Quiet hours may defer it.")
                .set("format", "date-time"),
            "follow_up": follow_up,
            "min_days_since_last_request": int_range(0, 365)
                .d("Refuse (409 cooldown_active) if this phone got a request within this many days.")
                .set("default", 0),
        },
        "additionalProperties": false,
    })
}

pub fn response() -> Value {
    let statuses = [
        status::SCHEDULED,
        status::DEFERRED,
        status::SENDING,
        status::UNCONFIRMED,
        status::SENT,
        status::DELIVERED,
        status::FOLLOW_UP_SCHEDULED,
        status::FOLLOW_UP_UNCONFIRMED,
        status::FOLLOW_UP_SENT,
        status::COMPLETED,
        status::OPTED_OUT,
        status::FAILED,
        status::CANCELLED,
    ];
    let props = json!({
        "id": s().d("Tracked request id.").set("pattern", "^rr_[A-Za-z0-9_-]{16,}$"),
        "status": one_of(&statuses).d(
            "completed, opted_out, failed and cancelled are terminal. unconfirmed and \
             follow_up_unconfirmed: the send's outcome is being confirmed with the SMS provider \
             (the text may have gone); never failed while it may have.",
        ),
        "created_at": s().set("format", "date-time"),
        "scheduled_send_at": s()
            .d("When the first SMS goes out (after any quiet-hours deferral).")
            .set("format", "date-time"),
        "message": obj(json!({
            "body": ne().d("The rendered SMS."),
            "encoding": one_of(&[Encoding::Gsm7.as_str(), Encoding::Ucs2.as_str()]),
            "segments": int().set("minimum", 1),
        })),
        "follow_up": obj(json!({
            "enabled": {"type": "boolean"},
            "due_at": {
                "type": ["string", "null"],
                "description": "RFC 3339 when known; null when disabled or not yet scheduled.",
            },
        })),
        "links": obj(json!({
            "self": s().d("GET: state and history of the request."),
            "cancel": s().d("POST: cancel the request."),
        })),
        "receipt": receipt(),
        "failure": {
            "description": "Why the request failed; null unless status is failed.",
            "anyOf": [
                obj(json!({
                    "reason": ne().d(
                        "provider_unavailable, not_sent, provider_error, consent_expired, \
                         invalid_zone_or_phone, message_render_failed or undelivered.",
                    ),
                    "code": {
                        "type": ["integer", "null"],
                        "description": "The SMS provider's error code, when it gave one.",
                    },
                    "message": ne().d("The reason in words."),
                })),
                {"type": "null"},
            ],
        },
        "sandbox": sandbox_flag(),
    });
    json!({
        "$schema": DRAFT,
        "title": format!("Grove action response: {}", REVIEW_REQUEST.id),
        "description": format!(
            "200 response of POST {}: the tracked review request.",
            REVIEW_REQUEST.call_path()
        ),
        "type": "object",
        "required": required_but_sandbox(&props),
        "properties": props,
        "additionalProperties": false,
    })
}
