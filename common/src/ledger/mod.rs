//! The ledger of paid work: the states of a call and of its payment (`status`), and the one
//! place that moves them.

pub mod status;

pub use status::{CallKind, CallStatus, PaymentStatus};
