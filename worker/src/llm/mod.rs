//! The LLM provider layer: one trait, two thin HTTP clients (OpenAI-compatible Chat Completions and
//! Anthropic Messages), each with its retry policy and the way it is asked for structured output.
//!
//! A provider turns one [`LlmRequest`] into one JSON value that the provider was asked to shape by
//! `request.schema`. It does not validate that value against the schema: every provider has a
//! fail-open path, so the caller re-validates whatever comes back.

mod anthropic;
mod error;
mod limits;
mod metered;
mod openai;
pub mod probe;
mod structured;
mod transport;

pub use crate::retry::RetryPolicy;
pub use anthropic::AnthropicProvider;
pub use error::LlmError;
pub use metered::Metered;
pub use openai::OpenAiProvider;

use grove_common::config::{LlmConfig, LlmProviderKind};
use std::sync::Arc;

/// A provider's copy of an answer schema: the value, for bodies that embed it in a larger
/// document, and its JSON text, written once. Serialising the schema (tens of kilobytes, every
/// string escaped) into every request body was about 4 % of a paid call's CPU (issue 12).
#[derive(Debug)]
pub struct ProviderSchema {
    value: serde_json::Value,
    json: Box<serde_json::value::RawValue>,
}

impl ProviderSchema {
    pub fn new(value: serde_json::Value) -> Self {
        let json = serde_json::value::to_raw_value(&value)
            .expect("a JSON value always serialises to JSON text");
        Self { value, json }
    }

    pub fn value(&self) -> &serde_json::Value {
        &self.value
    }

    /// The schema as JSON text, to be written into a body as it is.
    pub fn json(&self) -> &serde_json::value::RawValue {
        &self.json
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct LlmRequest {
    /// Shared with other calls in flight that read the same prompt (issue 31).
    pub system: Arc<str>,
    pub messages: Vec<ChatMessage>,
    /// Names the schema (OpenAI) or the forced tool (Anthropic fallback): `[a-zA-Z0-9_-]{1,64}`.
    pub schema_name: String,
    /// A schema this provider can enforce; the caller prepares the provider-specific copy once
    /// and shares it (a deep copy per call was measurable, issue 12).
    pub schema: Arc<ProviderSchema>,
    pub max_output_tokens: u32,
    /// When the whole call must be over, transport retries included; `None`: only the retry
    /// policy bounds it.
    pub deadline: Option<tokio::time::Instant>,
}

/// Tokens a provider reports for one call. Callers sum it over every attempt, failed ones included,
/// because that is what the provider bills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LlmResponse {
    /// The model's answer, parsed but not validated.
    pub json: serde_json::Value,
    pub usage: Usage,
    /// HTTP attempts made for this call, retries and the Anthropic format probe included.
    pub attempts: u32,
}

impl LlmResponse {
    /// The response to a call whose last attempt gave `result`, after `attempts` HTTP attempts.
    fn finish(
        result: Result<(serde_json::Value, Usage), LlmError>,
        attempts: u32,
    ) -> Result<Self, LlmError> {
        let (json, usage) = result?;
        tracing::debug!(
            attempts,
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            "llm call completed"
        );
        Ok(Self {
            json,
            usage,
            attempts,
        })
    }
}

#[async_trait::async_trait]
pub trait LlmProvider: Send + Sync {
    /// A stable label for logs and metrics: `openai` or `anthropic`.
    fn name(&self) -> &'static str;
    /// Whether the provider itself holds answers to the schema, in the way this client asks now
    /// (after any step down): `false` means the schema is only in the prompt or only JSON is
    /// guaranteed, and answers are checked after the fact. The doctor reports it.
    fn enforces_schema(&self) -> bool {
        true
    }
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;
    /// The health gate's probe (`probe`): one short real request, no retries. `Ok` by default,
    /// for models that have nothing to ask (the scripted models of the benchmarks).
    async fn probe(&self) -> Result<(), LlmError> {
        Ok(())
    }
}

/// Builds the client that `LLM_PROVIDER` names. Fails only on a configuration the client cannot
/// use (a base URL that does not parse, a TLS stack that does not initialise).
pub fn from_config(
    config: &LlmConfig,
    retry: RetryPolicy,
) -> Result<Arc<dyn LlmProvider>, LlmError> {
    Ok(match config.provider {
        LlmProviderKind::OpenAi => Arc::new(OpenAiProvider::new(config, retry)?),
        LlmProviderKind::Anthropic => Arc::new(AnthropicProvider::new(config, retry)?),
    })
}

/// Parses the model's text as JSON. Models behind a server that does not enforce the schema
/// sometimes wrap the object in a Markdown fence; strip one so that is not counted as a failure.
fn parse_model_json(text: &str, usage: Usage) -> Result<serde_json::Value, LlmError> {
    let trimmed = text.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced.trim()).map_err(|e| LlmError::InvalidOutput {
        message: format!("the model's answer is not JSON: {e}"),
        text: clip_answer(text),
        usage,
    })
}

/// Most of a malformed answer kept for the re-ask that quotes it: the start shows what went wrong
/// in most cases, and a whole runaway answer would cost its tokens again.
const ANSWER_QUOTE_MAX: usize = 4000;

fn clip_answer(text: &str) -> String {
    let text = text.trim();
    if text.len() <= ANSWER_QUOTE_MAX {
        return text.to_owned();
    }
    let cut = text.floor_char_boundary(ANSWER_QUOTE_MAX);
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_json_parses_plain_and_fenced_text() {
        let u = Usage::default();
        assert_eq!(parse_model_json(" {\"a\":1} ", u).unwrap(), json!({"a": 1}));
        assert_eq!(
            parse_model_json("```json\n{\"a\":1}\n```", u).unwrap(),
            json!({"a": 1})
        );
        assert!(matches!(
            parse_model_json("Sure! Here it is", u),
            Err(LlmError::InvalidOutput { .. })
        ));
    }
}
