//! Everything between the model's JSON and a deliverable envelope.
//!
//! The job handler's loop, per attempt:
//! 1. ask the provider with [`provider_schema`]`(`[`model_schema`]`(published), provider)`;
//! 2. [`review`] the answer: fix enum case ([`enum_case`]), [`assemble`] it (server keys,
//!    computed `context_gaps`, confidence ceiling), validate the envelope against the full
//!    published response schema and [`check`] the rules a schema cannot state, both lists
//!    together; if anything failed, try [`safe_repairs`] and judge again;
//! 3. if problems remain and attempts remain, append the model's answer as an assistant
//!    turn and [`reask_message`] (every schema and rule problem of that answer) as a user turn,
//!    and go to 1. An answer that is not JSON gets [`invalid_json_message`] instead; one cut off
//!    at the output limit is asked again once with a larger budget and [`SHORTER_ANSWER`].
//!
//! Module map: `check` runs the envelope rules and calls `trace` (numbers and their arithmetic,
//! via `arith`), `prose` (figures in text, with `stated` constants), `style` (the reply's form)
//! and each mode's own rules (`grove_common::modes`, one module per mode), to which `modes`
//! lends the figure tracing. `text` and `figures` are the shared readers;
//! `coverage` and `facts` decide what the caller gave; `repair` makes the safe repairs, with
//! `case` for enum spelling.

mod arith;
mod assemble;
mod case;
mod check;
mod coverage;
mod facts;
mod figures;
mod modes;
mod prose;
mod reask;
mod repair;
mod review;
mod schema;
mod stated;
mod style;
mod text;
mod trace;

#[cfg(test)]
mod tests;

pub use assemble::{ENVELOPE_ORDER, assemble, assemble_for};
pub use case::normalise_enums;
pub use check::{check, check_for};
pub use coverage::{
    Caller, Confidence, caller_figures, caller_gave_numbers, confidence_ceiling,
    missing_recommended,
};
pub use figures::{Figure, extract as extract_figures};
pub use grove_common::modes::audit_function::STATUS_BANDS as AUDIT_STATUS_BANDS;
pub use grove_common::modes::write_outbound_sequence::MERGE_TOKENS;
pub use reask::{SHORTER_ANSWER, invalid_json_message, reask_message};
pub use repair::{Repair, enum_case, safe_repairs};
pub use review::{Review, problems, review};
pub use schema::{MODEL_GAPS_MAX, MODEL_ORDER, SERVER_KEYS, model_schema, provider_schema};
