//! One model answer judged as written, exactly as the coaching engine judges it: enum case fixed,
//! assembled into the envelope, validated against the full published response schema, then
//! checked against every rule a schema cannot state. The engine (`coaching::judge`) starts here
//! and may then make safe repairs; the evaluation program (`bench --bin eval`) and its suite test
//! go through this same function.

use super::{Caller, Repair, assemble_for, check_for, repair::enum_case_for};
use grove_common::catalog::{CoachId, Mode};
use grove_common::schema::{SchemaDoc, Violation};
use serde_json::Value;

/// The envelope built from one answer and everything wrong with it (empty: deliverable).
#[derive(Debug)]
pub struct Review {
    pub envelope: Value,
    /// Schema violations first, then rule violations, all together so one re-ask can list them.
    pub problems: Vec<Violation>,
    /// Enum values whose case was fixed before assembly (always safe).
    pub repairs: Vec<Repair>,
}

pub fn review(
    response: &SchemaDoc,
    coach: CoachId,
    mode: &Mode,
    caller: &Caller,
    mut model_output: Value,
    usage: (u64, u64),
    receipt: Value,
) -> Review {
    let repairs = enum_case_for(mode.id, response.json(), &mut model_output);
    let envelope = assemble_for(coach, mode, caller, model_output, usage, receipt);
    let problems = problems(response, mode, caller, &envelope);
    Review {
        envelope,
        problems,
        repairs,
    }
}

/// Schema and rule problems of an assembled envelope, together: the rule checks read every field
/// defensively, so they run on an envelope the schema rejects too, and one re-ask can name
/// everything.
pub fn problems(
    response: &SchemaDoc,
    mode: &Mode,
    caller: &Caller,
    envelope: &Value,
) -> Vec<Violation> {
    let mut all = response.violations(envelope);
    for v in check_for(mode, caller, envelope) {
        if !all.contains(&v) {
            all.push(v);
        }
    }
    all
}
