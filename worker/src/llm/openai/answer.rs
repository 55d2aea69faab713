//! Reading a Chat Completions answer: the model's JSON, or why there is none.

use super::super::error::clip;
use super::super::{LlmError, Usage, parse_model_json};
use serde::Deserialize;
use serde_json::Value;

// Every field optional: compatible servers omit or null what they do not track, and a strict
// enum for `finish_reason` would break on values like TGI's `eos_token`.
#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Maps one successful HTTP answer to the model's JSON, or to the error that says why there is none.
/// Checks run in OpenAI's documented order: truncation, then refusal, then content filter.
pub(super) fn read_answer(body: &str) -> Result<(Value, Usage), LlmError> {
    let invalid = |message: &str, usage| LlmError::InvalidOutput {
        message: message.to_owned(),
        text: String::new(),
        usage,
    };
    let response: ChatResponse = serde_json::from_str(body)
        .map_err(|_| invalid("the body is not a chat completion", Usage::default()))?;
    let usage = response.usage.map_or_else(Usage::default, |u| Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
    });
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| invalid("the completion has no choices", usage))?;
    let finish = choice.finish_reason.as_deref();
    if finish == Some("length") {
        return Err(LlmError::Truncated { usage });
    }
    let message = choice
        .message
        .ok_or_else(|| invalid("the choice has no message", usage))?;
    if let Some(refusal) = message.refusal.filter(|r| !r.trim().is_empty()) {
        return Err(LlmError::Refusal {
            message: clip(refusal),
            usage,
        });
    }
    if finish == Some("content_filter") {
        return Err(LlmError::Refusal {
            message: "stopped by the provider's content filter".to_owned(),
            usage,
        });
    }
    let content = message
        .content
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| invalid("the message has no content", usage))?;
    Ok((parse_model_json(&content, usage)?, usage))
}
