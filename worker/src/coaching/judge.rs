//! One model answer judged: delivered as it is, delivered after safe repairs, or sent back with
//! every schema and rule problem it has, in one list.

use crate::envelope::{self, Repair};
use crate::llm::Usage;
use grove_common::catalog::{CoachId, Mode};
use grove_common::schema::{SchemaDoc, Violation};
use serde_json::Value;

pub(super) enum Verdict {
    Deliver {
        envelope: Value,
        /// The safe repairs it took (empty for an answer delivered as written).
        repairs: Vec<Repair>,
    },
    /// Every problem of the model's own answer: schema violations first, then broken rules.
    Reask(Vec<Violation>),
}

/// What an answer is judged against: who asked, what for, and the published response schema.
pub(super) struct Judge<'a> {
    pub coach: CoachId,
    pub mode: &'static Mode,
    /// The request and what it gives, worked out once for the call.
    pub caller: &'a envelope::Caller<'a>,
    pub response: &'a SchemaDoc,
    pub receipt: &'a Value,
}

impl Judge<'_> {
    pub(super) fn verdict(&self, answer: Value, usage: Usage) -> Verdict {
        let envelope::Review {
            envelope: mut env,
            problems,
            mut repairs,
        } = envelope::review(
            self.response,
            self.coach,
            self.mode,
            self.caller,
            answer,
            (usage.input_tokens, usage.output_tokens),
            self.receipt.clone(),
        );
        if problems.is_empty() {
            return Verdict::Deliver {
                envelope: env,
                repairs,
            };
        }
        let (more, left) = envelope::safe_repairs(self.response.json(), &mut env, |e| {
            envelope::problems(self.response, self.mode, self.caller, e)
        });
        if left.is_empty() && !more.is_empty() {
            repairs.extend(more);
            return Verdict::Deliver {
                envelope: env,
                repairs,
            };
        }
        Verdict::Reask(problems)
    }
}
