//! Everything between the model's JSON and a deliverable envelope.
//!
//! The job handler's loop, per attempt:
//! 1. ask the provider with [`provider_schema`]`(`[`model_schema`]`(published), provider)`;
//! 2. fix enum case ([`enum_case`]) and [`assemble`] the answer (server keys, computed
//!    `context_gaps`, confidence ceiling);
//! 3. validate the envelope against the full published response schema and [`check`] it,
//!    both lists together; if anything failed, try [`safe_repairs`] and validate again;
//! 4. if problems remain and attempts remain, append the model's answer as an assistant
//!    turn and [`reask_message`] (every schema and rule problem of that answer) as a user turn,
//!    and go to 1. An answer that is not JSON gets [`invalid_json_message`] instead; one cut off
//!    at the output limit is asked again once with a larger budget and [`SHORTER_ANSWER`].

mod assemble;
mod check;
mod coverage;
mod figures;
mod modes;
mod outbound;
mod reask;
mod repair;
mod schema;
mod trace;

#[cfg(test)]
mod tests;

pub use assemble::{ENVELOPE_ORDER, assemble, normalise_enums};
pub use check::check;
pub use coverage::{
    Confidence, caller_figures, caller_gave_numbers, confidence_ceiling, missing_recommended,
};
pub use figures::{Figure, extract as extract_figures};
pub use outbound::MERGE_TOKENS;
pub use reask::{SHORTER_ANSWER, invalid_json_message, reask_message};
pub use repair::{Repair, enum_case, safe_repairs};
pub use schema::{MODEL_GAPS_MAX, MODEL_ORDER, SERVER_KEYS, model_schema, provider_schema};
