//! The coaching engine: prompt the model, validate its answer against the published schema and
//! the rules a schema cannot state, re-ask at most twice, and sum usage over every model call.
//!
//! Each model answer is stored the moment it arrives (keyed by call, run and sequence), so a job
//! that runs again after a crash replays those answers instead of paying for them twice.

use crate::{
    envelope,
    llm::{ChatMessage, LlmError, LlmProvider, LlmRequest, Usage},
    prompts,
};
use grove_common::{
    catalog::{self, ByMode, CoachId, MODES, ModeId},
    config::LlmProviderKind,
    db::{calls, entities::call},
    receipt,
    schema::SchemaRegistry,
};
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::{Value, json};
use std::sync::Arc;

/// One first answer plus at most two re-asks.
pub const MAX_MODEL_CALLS: usize = 3;
const MAX_OUTPUT_TOKENS: u32 = 4096;

pub enum Outcome {
    Completed {
        envelope: Value,
        usage: Usage,
        model_calls: u32,
    },
    Failed {
        reason: String,
    },
}

pub struct Engine {
    llm: Arc<dyn LlmProvider>,
    schemas: Arc<SchemaRegistry>,
    /// The schema each mode's answer is constrained to, in the form this provider enforces.
    provider_schemas: ByMode<Value>,
}

impl Engine {
    pub fn new(
        llm: Arc<dyn LlmProvider>,
        schemas: Arc<SchemaRegistry>,
        provider: LlmProviderKind,
    ) -> Self {
        let provider_schemas = MODES.map(|id, _| {
            let published = schemas.mode(id).response.json();
            envelope::provider_schema(&envelope::model_schema(published), provider)
        });
        Self {
            llm,
            schemas,
            provider_schemas,
        }
    }

    pub async fn answer(
        &self,
        db: &DatabaseConnection,
        call: &call::Model,
    ) -> Result<Outcome, DbErr> {
        // The API stored ids it had parsed; parsing them again here is the worker's own edge.
        let coach = call.agent.as_deref().and_then(|a| CoachId::parse(a).ok());
        let mode = call.mode.as_deref().and_then(|m| ModeId::parse(m).ok());
        let (Some(coach), Some(mode)) = (coach, mode) else {
            return Ok(Outcome::Failed {
                reason: "call record names no known coach and mode".into(),
            });
        };
        let (coach, mode) = (catalog::coach(coach), catalog::mode(mode));
        let pair = self.schemas.mode(mode.id);
        let schema = &self.provider_schemas[mode.id];
        let request = &call.request;
        let missing = envelope::missing_recommended(mode, request);
        let ceiling = envelope::confidence_ceiling(mode, request);
        let (system, conversation) = prompts::build(coach, mode, request, &missing, ceiling);
        let mut messages: Vec<ChatMessage> = conversation
            .into_iter()
            .map(|(role, text)| {
                if role == prompts::ASSISTANT {
                    ChatMessage::assistant(text)
                } else {
                    ChatMessage::user(text)
                }
            })
            .collect();
        let receipt = receipt::json(&call.receipt_id, call.created_at);
        let stored = calls::model_calls(db, call.id, call.runs).await?;

        let mut usage = Usage::default();
        let mut last_problem = String::from("no answer");
        for seq in 0..MAX_MODEL_CALLS {
            let answer = match stored.get(seq) {
                Some(rec) => replayed(rec),
                None => {
                    let req = LlmRequest {
                        system: system.clone(),
                        messages: messages.clone(),
                        schema_name: format!("grove_{}", mode.id),
                        schema: schema.clone(),
                        max_output_tokens: MAX_OUTPUT_TOKENS,
                        deadline: None,
                    };
                    let result = self.llm.complete(&req).await;
                    record(db, call, seq, &result).await?;
                    result.map(|r| (r.json, r.usage, r.attempts))
                }
            };
            let model_calls = u32::try_from(seq + 1).unwrap_or(u32::MAX);
            match answer {
                Ok((json, used, _)) => {
                    usage += used;
                    let env = envelope::assemble(
                        coach.id,
                        mode,
                        request,
                        json.clone(),
                        (usage.input_tokens, usage.output_tokens),
                        receipt.clone(),
                    );
                    let mut problems = pair.response.violations(&env);
                    if problems.is_empty() {
                        problems = envelope::check(mode, request, &env);
                    }
                    if problems.is_empty() {
                        return Ok(Outcome::Completed {
                            envelope: env,
                            usage,
                            model_calls,
                        });
                    }
                    last_problem = format!(
                        "{} problem(s), first: {} {}",
                        problems.len(),
                        problems[0].path,
                        problems[0].message
                    );
                    tracing::info!(call_id = %call.id, seq, problems = problems.len(), "model answer failed validation; re-asking");
                    messages.push(ChatMessage::assistant(json.to_string()));
                    messages.push(ChatMessage::user(envelope::reask_message(&problems)));
                }
                Err(e) => {
                    usage += e.usage();
                    match e {
                        LlmError::InvalidOutput { .. } => {
                            last_problem = "the answer was not valid JSON".into();
                            messages.push(ChatMessage::user(
                                "Your previous answer was not valid JSON. Answer again with one JSON object that follows the schema exactly.",
                            ));
                        }
                        other => {
                            return Ok(Outcome::Failed {
                                reason: describe(&other),
                            });
                        }
                    }
                }
            }
        }
        Ok(Outcome::Failed {
            reason: format!(
                "model answer still invalid after {MAX_MODEL_CALLS} attempts: {last_problem}"
            ),
        })
    }
}

fn describe(e: &LlmError) -> String {
    match e {
        LlmError::Refusal { .. } => "model_refused".into(),
        LlmError::Truncated { .. } => "model_output_truncated".into(),
        LlmError::Quota { .. } => "model_quota_exhausted".into(),
        LlmError::Auth { status, .. } => format!("model_auth_failed:{status}"),
        LlmError::BadRequest { status, .. } => format!("model_rejected_request:{status}"),
        LlmError::Upstream { status, .. } => format!(
            "model_unavailable:{}",
            status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "network".into())
        ),
        other => format!("model_error:{other}"),
    }
}

type Answer = Result<(Value, Usage, u32), LlmError>;

/// Rebuilds an answer stored by an earlier (crashed) run of this job.
fn replayed(rec: &grove_common::db::entities::model_call::Model) -> Answer {
    let usage = Usage {
        input_tokens: u64::try_from(rec.input_tokens).unwrap_or_default(),
        output_tokens: u64::try_from(rec.output_tokens).unwrap_or_default(),
    };
    match rec.outcome.get("ok") {
        Some(json) => Ok((json.clone(), usage, 0)),
        None => Err(LlmError::InvalidOutput {
            message: "stored invalid output".into(),
            text: String::new(),
            usage,
        }),
    }
}

/// Stores a model answer that cost tokens (a valid JSON answer or an invalid one). Transport
/// failures cost nothing and are not replayed, so a free retry asks the model afresh.
async fn record(
    db: &DatabaseConnection,
    call: &call::Model,
    seq: usize,
    result: &Result<crate::llm::LlmResponse, LlmError>,
) -> Result<(), DbErr> {
    let seq = i32::try_from(seq).unwrap_or(i32::MAX);
    let (outcome, usage, attempts) = match result {
        Ok(r) => (json!({"ok": r.json}), r.usage, r.attempts),
        Err(e @ LlmError::InvalidOutput { .. }) => {
            (json!({"error": "invalid_output"}), e.usage(), 1)
        }
        Err(_) => return Ok(()),
    };
    calls::record_model_call(
        db,
        call.id,
        call.runs,
        seq,
        outcome,
        (usage.input_tokens, usage.output_tokens),
        attempts,
    )
    .await
}
