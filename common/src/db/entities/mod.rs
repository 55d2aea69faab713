//! sea-orm entities, one module per table. The schema itself is owned by the `migrations` crate.

pub mod admin_audit;
pub mod call;
pub mod consent;
pub mod idempotency;
pub mod link_click;
pub mod model_call;
pub mod payment;
pub mod phone_mark;
pub mod provider_gate;
pub mod receipt;
pub mod result;
pub mod review_event;
pub mod review_message;
pub mod review_request;
pub mod suppression;
