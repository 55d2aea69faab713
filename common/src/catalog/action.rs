//! The one paid action: review request.

use super::paths::{self, review_request_id, review_request_slug};
use crate::money::UsdcAmount;

#[derive(Debug)]
pub struct Action {
    pub id: &'static str,
    pub slug: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    pub price: UsdcAmount,
}

impl Action {
    pub fn call_path(&self) -> String {
        paths::REVIEW_REQUEST_CALL.to_owned()
    }

    pub fn request_schema_path(&self) -> String {
        paths::REVIEW_REQUEST_REQUEST_SCHEMA.to_owned()
    }

    pub fn response_schema_path(&self) -> String {
        paths::REVIEW_REQUEST_RESPONSE_SCHEMA.to_owned()
    }
}

pub static REVIEW_REQUEST: Action = Action {
    id: review_request_id!(),
    slug: review_request_slug!(),
    name: "Review request",
    summary: "Ask one customer of a business for a review by SMS: consent checked, opt-outs \
              honoured, quiet hours respected, one follow-up handled. Returns a tracked request id.",
    price: UsdcAmount::from_atomic(120_000),
};
