//! One model answer judged exactly as the coaching engine judges it: assembled into the
//! envelope, validated against the full published response schema, then checked against every
//! rule a schema cannot state. The evaluation program (`bench --bin eval`) and its suite test go
//! through this same function.

use super::{assemble, check};
use grove_common::catalog::{CoachId, Mode};
use grove_common::schema::{SchemaRegistry, Violation};
use serde_json::Value;

/// The envelope built from one answer and everything wrong with it (empty: deliverable).
#[derive(Debug)]
pub struct Review {
    pub envelope: Value,
    /// Schema violations first, then rule violations, all together so one re-ask can list them.
    pub problems: Vec<Violation>,
}

pub fn review(
    schemas: &SchemaRegistry,
    coach: CoachId,
    mode: &Mode,
    request: &Value,
    model_output: Value,
    usage: (u64, u64),
    receipt: Value,
) -> Review {
    let envelope = assemble(coach, mode, request, model_output, usage, receipt);
    let mut problems = schemas.mode(mode.id).response.violations(&envelope);
    problems.extend(check(mode, request, &envelope));
    Review { envelope, problems }
}
