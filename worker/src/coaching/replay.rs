//! Each model answer that cost tokens is stored (keyed by call, run and sequence), so a job that
//! runs again after a crash replays it instead of paying twice, and takes the same path through
//! the loop (the same re-ask, the same larger budget). An answer that is sent back or fails is
//! stored the moment it is judged; the answer that is delivered is stored with the result, in
//! its transaction (issue 12: one write fewer per call). A crash in the moment between its
//! arrival and that commit costs one more model call, never a second result.

use crate::llm::{LlmError, LlmResponse, Usage};
use grove_common::db::{
    calls::{self, ModelCallRecord},
    entities::{call, model_call},
};
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::{Value, json};

/// One model call's answer: its JSON and tokens, or why there is none.
pub(super) type Answer = Result<(Value, Usage), LlmError>;

/// Rebuilds an answer stored by an earlier (crashed) run of this job.
pub(super) fn replayed(rec: &model_call::Model) -> Answer {
    let usage = Usage {
        input_tokens: u64::try_from(rec.input_tokens).unwrap_or_default(),
        output_tokens: u64::try_from(rec.output_tokens).unwrap_or_default(),
    };
    if let Some(json) = rec.outcome.get("ok") {
        return Ok((json.clone(), usage));
    }
    let text = |key: &str| {
        rec.outcome
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Err(match rec.outcome.get("error").and_then(Value::as_str) {
        Some("truncated") => LlmError::Truncated { usage },
        Some("refused") => LlmError::Refusal {
            message: text("message"),
            usage,
        },
        _ => LlmError::InvalidOutput {
            message: text("message"),
            text: text("text"),
            usage,
        },
    })
}

/// The record of a model answer that cost tokens: a JSON answer, one that did not parse, one cut
/// off at the output limit, a refusal. Failures that cost nothing (transport, deadline) have
/// none, so a re-run asks the model afresh.
pub(super) fn entry(
    call: &call::Model,
    seq: usize,
    result: &Result<LlmResponse, LlmError>,
) -> Option<ModelCallRecord> {
    let seq = i32::try_from(seq).unwrap_or(i32::MAX);
    let (outcome, usage, attempts) = match result {
        // A clone, not `json!`: the macro would rebuild the answer through the serializer.
        Ok(r) => (
            Value::Object(serde_json::Map::from_iter([(
                "ok".to_owned(),
                r.json.clone(),
            )])),
            r.usage,
            r.attempts,
        ),
        Err(e) => {
            let outcome = match e {
                LlmError::InvalidOutput { message, text, .. } => {
                    json!({"error": "invalid_output", "message": message, "text": text})
                }
                LlmError::Truncated { .. } => json!({"error": "truncated"}),
                LlmError::Refusal { message, .. } => {
                    json!({"error": "refused", "message": message})
                }
                _ => return None,
            };
            (outcome, e.usage(), 1)
        }
    };
    Some(ModelCallRecord {
        run: call.runs,
        seq,
        outcome,
        tokens: (usage.input_tokens, usage.output_tokens),
        http_attempts: attempts,
    })
}

/// Stores an answer's record now (one that is not delivered, or a failure that cost tokens).
pub(super) async fn record(
    db: &DatabaseConnection,
    call: &call::Model,
    entry: Option<ModelCallRecord>,
) -> Result<(), DbErr> {
    // Keyed by run and sequence: repeating it after a database blip stores it once. From its
    // own allocation: inline, the write's future would size every run's while it waits on the
    // model (issue 31).
    match entry {
        Some(rec) => {
            Box::pin(grove_common::db::outage::retrying(
                "store a model answer",
                || calls::store_model_call(db, call.id, rec.clone()),
            ))
            .await
        }
        None => Ok(()),
    }
}
