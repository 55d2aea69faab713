//! Paid request bodies as types. A body is checked first against its published JSON Schema (and,
//! for the review request, the rules a schema cannot state), so that one answer names every
//! problem; what passes is deserialised here once. The route holds the type; the payment gate
//! needs only the JSON it stores in the call record (`calls.request`) and fingerprints, written
//! from the type; whoever works the call reads that JSON back into the type once, with
//! [`from_stored`] (the coaching worker, and the review product when a settlement is learned
//! later), and passes the type on.
//!
//! Serialising a body gives back the JSON the client sent, up to the order of keys (timestamps
//! keep their spelling, numbers their representation), so the idempotency fingerprint of a typed
//! body is the fingerprint of the original.

mod coaching;
mod review;
mod timestamp;

pub use coaching::{
    Audience, CoachingRequest, Company, CompanyStage, Context, Message, Metrics, Offer, Role,
};
pub use review::{
    Business, Consent, Customer, DEFAULT_FOLLOW_UP_AFTER_HOURS, FollowUp, MessageSpec,
    ReviewRequestBody,
};
pub use timestamp::Timestamp;

use crate::schema::Violation;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserialises a body that passed its schema. A schema and a type that disagree (a bug, or a
/// number the schema takes as an integer that is written `72.0`) come back as one violation at
/// the body's root, never as a panic or a 500.
pub fn parse<T: DeserializeOwned>(body: Value) -> Result<T, Violation> {
    serde_json::from_value(body).map_err(|e| Violation::new("", e.to_string()))
}

/// The type read back from a stored call's `request` column (written from the same type). Given
/// the `Value` itself rather than a reference, its strings move into the type uncopied.
pub fn from_stored<'de, T, D>(stored: D) -> Result<T, serde_json::Error>
where
    T: DeserializeOwned,
    D: serde::Deserializer<'de, Error = serde_json::Error>,
{
    T::deserialize(stored)
}
