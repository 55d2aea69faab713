//! The paid gate (CONTRACT 3 and 4): a product, a payment, and the flow between them.
//!
//! - `product`: what is bought, as the gate sees it (one trait; `crate::products` has the
//!   coaching call and the review request).
//! - `gate`: the purchase, free of any transport: verify, idempotency, reserve and record, the
//!   product's last check, settle, fulfil, await, and the outcome as data (`ended`); `terms`
//!   builds the challenges that refuse it.
//! - `http`: the HTTP adapter (the payment from headers, the outcome as a response).
//! - `fulfil`: what follows a settled payment, and the repeat of a held request.
//! - `health`: no price while the product's provider is down (its health gate is open);
//!   `admission`: no price for a coaching call that could not finish within the deadline.
//! - `ledger` (the durable records), `idempotency`, `push` (and its `retries`), `wait`, and
//!   `reconcile`, the server's own follow-through on money already taken; `rerun`, which
//!   finishes paid calls that failed in a provider outage once the provider is back.

pub mod admission;
pub mod ended;
pub mod fulfil;
pub mod gate;
mod health;
pub mod http;
pub mod idempotency;
mod ledger;
pub mod product;
pub mod push;
pub mod reconcile;
pub mod rerun;
pub mod retries;
mod terms;
mod wait;

pub use ledger::SharedNonces;
pub use product::{Labels, NotSold, Product};
