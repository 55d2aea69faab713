//! The coaching engine: prompt the model, judge its answer against the published schema and the
//! rules a schema cannot state, repair what is safe to repair, re-ask with every problem at
//! once, and sum usage over every model call, failed ones included. One deadline, below
//! `CALL_DEADLINE_S`, bounds the whole call: the model calls, their transport retries and the
//! re-asks.

mod judge;
mod replay;

use crate::{
    envelope,
    llm::{ChatMessage, LlmError, LlmProvider, LlmRequest, ProviderSchema, Usage},
    prompts,
};
use grove_common::{
    catalog::{self, ByMode, MODES},
    config::LlmProviderKind,
    db::{
        calls::{self, ModelCallRecord},
        entities::call,
    },
    health::{self, Gates, ProviderId, reasons},
    receipt,
    requests::{self, CoachingRequest},
    schema::SchemaRegistry,
};
use judge::{Judge, Verdict};
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::Value;
use std::{sync::Arc, time::Duration};
use tokio::time::Instant;

/// One first answer plus at most two more: re-asks, or the one retry of a cut-off answer.
pub const MAX_MODEL_CALLS: usize = 3;
const MAX_OUTPUT_TOKENS: u32 = 4096;
/// The budget of the one retry after an answer cut off at [`MAX_OUTPUT_TOKENS`].
const TRUNCATED_RETRY_TOKENS: u32 = 8192;

pub enum Outcome {
    Completed {
        envelope: Value,
        usage: Usage,
        model_calls: u32,
        /// The delivered answer's record, stored with the result (`calls::complete`); None when
        /// it was replayed from the record already.
        answer: Option<ModelCallRecord>,
    },
    Failed {
        reason: String,
    },
}

pub struct Engine {
    llm: Arc<dyn LlmProvider>,
    schemas: Arc<SchemaRegistry>,
    /// The schema each mode's answer is constrained to, in the form this provider enforces.
    provider_schemas: ByMode<Arc<ProviderSchema>>,
    /// How long one run may take: `CALL_DEADLINE_S` less the time the API needs to answer.
    budget: Duration,
    /// The model's health gate: fed every run's outcome, and asked before each model call.
    health: Option<(Gates, ProviderId)>,
}

impl Engine {
    /// `call_deadline` is `CALL_DEADLINE_S`: how long the API waits for the result.
    pub fn new(
        llm: Arc<dyn LlmProvider>,
        schemas: Arc<SchemaRegistry>,
        provider: LlmProviderKind,
        call_deadline: Duration,
    ) -> Self {
        let provider_schemas = MODES.map(|id, _| {
            let published = schemas.mode(id).response.json();
            Arc::new(ProviderSchema::new(envelope::provider_schema(
                &envelope::model_schema(published),
                provider,
            )))
        });
        // A tenth of the deadline, at least half a second and at most five, is left for storing
        // the result and the API's answer.
        let margin = (call_deadline / 10).clamp(Duration::from_millis(500), Duration::from_secs(5));
        Self {
            llm,
            schemas,
            provider_schemas,
            budget: call_deadline.saturating_sub(margin),
            health: None,
        }
    }

    /// Reports every run's outcome to `provider`'s gate, and fails a run fast (without asking
    /// the model) while that gate is open: the api re-runs it once the gate closes again.
    pub fn with_health(mut self, gates: Gates, provider: ProviderId) -> Self {
        self.health = Some((gates, provider));
        self
    }

    /// Whether the model's gate lets this run ask the model.
    fn model_admitted(&self) -> bool {
        self.health
            .as_ref()
            .is_none_or(|(gates, provider)| gates.admits(provider))
    }

    async fn report(&self, outcome: Option<health::Outcome>) {
        if let (Some((gates, provider)), Some(outcome)) = (&self.health, outcome) {
            // Boxed for the same reason as the reads and writes below (`replay::record`).
            Box::pin(gates.record(provider, outcome)).await;
        }
    }

    /// When this run must be over. A first run gets what is left of the budget since the call
    /// was paid for (settlement and the queue took the rest), but at least half of it: a run
    /// that starts late (a slow settlement, a backlog, a crashed worker's job taken over) is past
    /// the API's wait anyway, and its client collects the result from the receipt. A free re-run
    /// starts with the request that asked for it, so it gets the whole budget.
    fn deadline_for(&self, call: &call::Model) -> Instant {
        let granted = if call.runs == 0 {
            let age = (grove_common::clock::wall() - call.created_at)
                .to_std()
                .unwrap_or(Duration::ZERO);
            self.budget.saturating_sub(age).max(self.budget / 2)
        } else {
            self.budget
        };
        Instant::now() + granted
    }

    /// Answers `call`, whose stored request (`calls.request`) the caller hands over apart from
    /// the row: it is read into its typed form here and not kept.
    pub async fn answer(
        &self,
        db: &DatabaseConnection,
        call: &call::Model,
        stored: serde_json::Value,
    ) -> Result<Outcome, DbErr> {
        let deadline = self.deadline_for(call);
        // The call's coach and mode are typed where the row is read (`calls.agent`, `calls.mode`).
        let (Some(coach), Some(mode)) = (call.agent, call.mode) else {
            return Ok(Outcome::Failed {
                reason: "call record names no known coach and mode".into(),
            });
        };
        let (coach, mode) = (catalog::coach(coach), catalog::mode(mode));
        // The API stored the typed body; it is read back once, and travels typed from here.
        let request: CoachingRequest = match requests::from_stored(stored) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Outcome::Failed {
                    reason: format!("call record's request does not read back: {e}"),
                });
            }
        };
        let request = &request;
        let caller = envelope::Caller::of(mode, request);
        let (mut system, conversation) = prompts::build(coach, mode, &caller);
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
        let judge = Judge {
            coach: coach.id,
            mode,
            caller: &caller,
            response: &self.schemas.mode(mode.id).response,
            receipt: &receipt,
        };
        // A call's first start has no recorded answers to replay: skip the read (issue 12).
        let stored = if call.attempts > 1 {
            Box::pin(calls::model_calls(db, call.id, call.runs)).await?
        } else {
            Vec::new()
        };

        let mut usage = Usage::default();
        let mut budget = MAX_OUTPUT_TOKENS;
        let mut last_problem = String::from("no answer");
        for seq in 0..MAX_MODEL_CALLS {
            // This answer's record while it is not stored yet.
            let mut entry = None;
            let answer = match stored.get(seq) {
                Some(rec) => replay::replayed(rec),
                None if !self.model_admitted() => {
                    tracing::info!(call_id = %call.id, seq, "the model's health gate is open; failing fast, to be re-run once it closes");
                    return Ok(failed(call, reasons::GATE_OPEN.into(), usage));
                }
                None => {
                    // The messages are lent to the request and taken back for a re-ask, not
                    // copied: a copy would be held through the whole wait (issue 31).
                    let req = LlmRequest {
                        system: Arc::clone(&system),
                        messages: std::mem::take(&mut messages),
                        schema_name: format!("grove_{}", mode.id),
                        schema: Arc::clone(&self.provider_schemas[mode.id]),
                        max_output_tokens: budget,
                        deadline: Some(deadline),
                    };
                    let result = self.llm.complete(&req).await;
                    messages = req.messages;
                    entry = replay::entry(call, seq, &result);
                    result.map(|r| (r.json, r.usage))
                }
            };
            let model_calls = u32::try_from(seq + 1).unwrap_or(u32::MAX);
            match answer {
                Ok((json, used)) => {
                    usage += used;
                    match judge.verdict(json.clone(), usage) {
                        Verdict::Deliver { envelope, repairs } => {
                            for r in &repairs {
                                tracing::info!(call_id = %call.id, seq, path = %r.path, repair = r.what, "safe repair made");
                            }
                            self.report(Some(health::Outcome::Succeeded)).await;
                            return Ok(Outcome::Completed {
                                envelope,
                                usage,
                                model_calls,
                                answer: entry,
                            });
                        }
                        Verdict::Reask(problems) => {
                            replay::record(db, call, entry).await?;
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
                    }
                }
                Err(LlmError::InvalidOutput {
                    message,
                    text,
                    usage: used,
                }) => {
                    replay::record(db, call, entry).await?;
                    usage += used;
                    tracing::info!(call_id = %call.id, seq, error = %message, "model answer is not JSON; re-asking");
                    last_problem = "the answer was not valid JSON".into();
                    if !text.is_empty() {
                        messages.push(ChatMessage::assistant(text.clone()));
                    }
                    messages.push(ChatMessage::user(envelope::invalid_json_message(
                        &message,
                        !text.is_empty(),
                    )));
                }
                Err(LlmError::Truncated { usage: used }) if budget == MAX_OUTPUT_TOKENS => {
                    replay::record(db, call, entry).await?;
                    usage += used;
                    tracing::info!(call_id = %call.id, seq, "model answer cut off; asking once more for a shorter one");
                    last_problem = "the answer was cut off at the output limit".into();
                    budget = TRUNCATED_RETRY_TOKENS;
                    system = format!("{system}\n\n{}", envelope::SHORTER_ANSWER).into();
                }
                Err(e) => {
                    replay::record(db, call, entry).await?;
                    usage += e.usage();
                    self.report(outage(&e)).await;
                    return Ok(failed(call, describe(&e), usage));
                }
            }
        }
        let reason =
            format!("model answer still invalid after {MAX_MODEL_CALLS} attempts: {last_problem}");
        self.report(Some(health::Outcome::Failed(reason.clone())))
            .await;
        Ok(failed(call, reason, usage))
    }
}

/// A failed call: its tokens are logged (and stored per model call), never lost.
fn failed(call: &call::Model, reason: String, usage: Usage) -> Outcome {
    tracing::warn!(call_id = %call.id, %reason, input_tokens = usage.input_tokens,
        output_tokens = usage.output_tokens, "coaching call produced no deliverable answer");
    Outcome::Failed { reason }
}

/// The reason a failed call stores. Those that say the model could not serve it are
/// `health::reasons`, which the api re-runs once the model's gate closes again.
fn describe(e: &LlmError) -> String {
    match e {
        LlmError::Refusal { .. } => "model_refused".into(),
        LlmError::Truncated { .. } => "model_output_truncated".into(),
        LlmError::Quota { .. } => reasons::QUOTA.into(),
        LlmError::Deadline { .. } => reasons::DEADLINE.into(),
        LlmError::Auth { status, .. } => format!("{}:{status}", reasons::AUTH),
        LlmError::BadRequest { status, .. } => format!("model_rejected_request:{status}"),
        LlmError::Upstream { status, .. } => format!(
            "{}:{}",
            reasons::UNAVAILABLE,
            status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "network".into())
        ),
        other => format!("model_error:{other}"),
    }
}

/// A model failure that counts against its health (connection errors, timeouts, 5xx, 429 past
/// the retries, the account's quota or key, a model that does not exist); None for what the call
/// itself caused (a refusal, an answer cut off, a request the model rejected).
fn outage(e: &LlmError) -> Option<health::Outcome> {
    let reason = describe(e);
    reasons::is_outage(&reason)
        .then(|| health::Outcome::Failed(crate::log_text::clip(format!("{reason}: {e}"))))
}
