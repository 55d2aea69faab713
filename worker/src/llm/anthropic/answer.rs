//! Reading a Messages answer: the model's JSON, or why there is none.

use super::super::error::clip;
use super::super::{LlmError, Usage, parse_model_json};
use super::Mode;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

/// Maps one successful HTTP answer to the model's JSON, or to the error that says why there is none.
pub(super) fn read_answer(body: &str, mode: Mode) -> Result<(Value, Usage), LlmError> {
    let invalid = |message: &str, usage| LlmError::InvalidOutput {
        message: message.to_owned(),
        text: String::new(),
        usage,
    };
    let response: MessagesResponse = serde_json::from_str(body)
        .map_err(|_| invalid("the body is not a Messages response", Usage::default()))?;
    // Cached prompt tokens are input too (billed at other rates): the total is the sum of all three.
    let usage = response.usage.map_or_else(Usage::default, |u| Usage {
        input_tokens: [
            u.input_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
        ]
        .into_iter()
        .flatten()
        .fold(0u64, u64::saturating_add),
        output_tokens: u.output_tokens.unwrap_or(0),
    });
    let first_text = response.content.iter().find_map(|b| match b {
        Block::Text { text } if !text.trim().is_empty() => Some(text.as_str()),
        _ => None,
    });
    match response.stop_reason.as_deref() {
        Some("max_tokens" | "model_context_window_exceeded") => {
            return Err(LlmError::Truncated { usage });
        }
        Some("refusal") => {
            let message = clip(
                first_text
                    .unwrap_or("the model declined to answer")
                    .to_owned(),
            );
            return Err(LlmError::Refusal { message, usage });
        }
        _ => {}
    }
    match mode {
        Mode::Native | Mode::Prompt => {
            let text = first_text.ok_or_else(|| invalid("the answer has no text block", usage))?;
            Ok((parse_model_json(text, usage)?, usage))
        }
        Mode::Tool => response
            .content
            .into_iter()
            .find_map(|b| match b {
                Block::ToolUse { input } if !input.is_null() => Some((input, usage)),
                _ => None,
            })
            .ok_or_else(|| invalid("the answer has no tool_use block", usage)),
    }
}
