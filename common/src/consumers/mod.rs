//! The consuming side of the job queues: each consumer's health (what readiness and the
//! worker's health endpoint report) and the fetch gate that spreads Redis work across workers.

pub mod fetch;
pub mod health;

pub use fetch::{FETCH_BATCH, FairFetch, Peers, WakeFeed};
pub use health::{ConsumerHandle, ConsumerState, Consumers, State};
