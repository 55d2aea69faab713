//! Shared by the `api` and `worker` crates: the catalog (defined once), one module per mode
//! (deliverable types and rules), wire types, the schema registry, configuration and telemetry
//! set-up.

pub mod catalog;
pub mod clock;
pub mod completion;
pub mod config;
pub mod consumers;
pub mod db;
pub mod doctor;
pub mod health;
pub mod http_client;
pub mod jobs;
pub mod ledger;
pub mod load;
pub mod metrics;
pub mod modes;
pub mod money;
pub mod queue;
pub mod receipt;
pub mod requests;
pub mod review;
pub mod review_service;
pub mod sandbox;
pub mod schema;
pub mod shutdown;
pub mod telemetry;
pub mod twilio;
pub mod x402;
