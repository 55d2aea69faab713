//! The one paid action: review request.

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
        format!("/api/v1/actions/{}/call", self.slug)
    }

    pub fn request_schema_path(&self) -> String {
        format!("/api/v1/schemas/actions/{}/request.json", self.id)
    }

    pub fn response_schema_path(&self) -> String {
        format!("/api/v1/schemas/actions/{}/response.json", self.id)
    }
}

pub static REVIEW_REQUEST: Action = Action {
    id: "review_request",
    slug: "review-request",
    name: "Review request",
    summary: "Ask one customer of a business for a review by SMS: consent checked, opt-outs \
              honoured, quiet hours respected, one follow-up handled. Returns a tracked request id.",
    price: UsdcAmount::from_atomic(120_000),
};
