//! Everything between the model's JSON and a deliverable envelope.
//!
//! The job handler's loop, per attempt:
//! 1. ask the provider with [`provider_schema`]`(`[`model_schema`]`(published), provider)`;
//! 2. [`review`] the answer: [`assemble`] it (server keys, computed `context_gaps`, confidence
//!    ceiling, enum case), validate the envelope against the full published response schema,
//!    and [`check`] the rules a schema cannot state;
//! 3. if anything failed and attempts remain, append the model's raw answer as an assistant
//!    turn and [`reask_message`] as a user turn, and go to 1.
//!
//! Module map: `check` runs the envelope rules and calls `trace` (numbers and their arithmetic,
//! via `arith`), `prose` (figures in text, with `stated` constants), `style` (the reply's form)
//! and `modes` (one checker per family of modes). `text` and `figures` are the shared readers;
//! `coverage` and `facts` decide what the caller gave.

mod arith;
mod assemble;
mod check;
mod coverage;
mod facts;
mod figures;
mod modes;
mod prose;
mod reask;
mod review;
mod schema;
mod stated;
mod style;
mod text;
mod trace;

#[cfg(test)]
mod tests;

pub use assemble::{ENVELOPE_ORDER, assemble, normalise_enums};
pub use check::check;
pub use coverage::{
    Confidence, caller_figures, caller_gave_numbers, confidence_ceiling, missing_recommended,
};
pub use figures::{Figure, extract as extract_figures};
pub use modes::MERGE_TOKENS;
pub use reask::reask_message;
pub use review::{Review, review};
pub use schema::{MODEL_GAPS_MAX, SERVER_KEYS, model_schema, provider_schema};
