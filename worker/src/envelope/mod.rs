//! Everything between the model's JSON and a deliverable envelope.
//!
//! The job handler's loop, per attempt:
//! 1. ask the provider with [`provider_schema`]`(`[`model_schema`]`(published), provider)`;
//! 2. [`assemble`] the answer (server keys, computed `context_gaps`, confidence ceiling, enum case);
//! 3. validate the envelope against the full published response schema, then [`check`];
//! 4. if anything failed and attempts remain, append the model's raw answer as an assistant
//!    turn and [`reask_message`] as a user turn, and go to 1.

mod assemble;
mod check;
mod coverage;
mod figures;
mod modes;
mod outbound;
mod reask;
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
pub use reask::reask_message;
pub use schema::{MODEL_GAPS_MAX, SERVER_KEYS, model_schema, provider_schema};
