//! The Messages request body, borrowing from the call it is written for: the prompt and the
//! messages uncopied, the schema as the JSON text prepared once (`ProviderSchema`). A body lives
//! for the whole wait on the model (a transport retry sends it again), and the `serde_json::Value`
//! it replaced held a copy of each for every call in flight (issue 31).

use super::{Mode, TOOL_DESCRIPTION};
use crate::llm::{LlmRequest, structured};
use serde::Serialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Serialize)]
pub(super) struct Body<'r> {
    model: &'r str,
    pub(super) max_tokens: u32,
    messages: Vec<Message<'r>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: Cow<'r, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'r>>,
    /// Forced tool use: the one tool, and the choice of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Tool<'r>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Named<'r>>,
}

#[derive(Serialize)]
struct Message<'r> {
    role: &'static str,
    content: &'r str,
}

#[derive(Serialize)]
struct OutputConfig<'r> {
    format: Format<'r>,
}

#[derive(Serialize)]
struct Format<'r> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'r RawValue,
}

#[derive(Serialize)]
struct Tool<'r> {
    name: &'r str,
    description: &'static str,
    input_schema: &'r RawValue,
}

/// `{"type": "tool", "name": ...}`.
#[derive(Serialize)]
struct Named<'r> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'r str,
}

impl<'r> Body<'r> {
    pub(super) fn new(
        model: &'r str,
        temperature: Option<f32>,
        request: &'r LlmRequest,
        mode: Mode,
    ) -> Self {
        let schema = request.schema.json();
        let system = match mode {
            Mode::Prompt => Cow::Owned(structured::schema_in_prompt(&request.system, schema)),
            Mode::Native | Mode::Tool => Cow::Borrowed(&*request.system),
        };
        let name = request.schema_name.as_str();
        let (output_config, tools, tool_choice) = match mode {
            Mode::Native => (
                Some(OutputConfig {
                    format: Format {
                        kind: "json_schema",
                        schema,
                    },
                }),
                None,
                None,
            ),
            Mode::Tool => (
                None,
                Some([Tool {
                    name,
                    description: TOOL_DESCRIPTION,
                    input_schema: schema,
                }]),
                Some(Named { kind: "tool", name }),
            ),
            Mode::Prompt => (None, None, None),
        };
        Self {
            model,
            max_tokens: request.max_output_tokens,
            messages: request
                .messages
                .iter()
                .map(|m| Message {
                    role: m.role.as_str(),
                    content: &m.content,
                })
                .collect(),
            temperature,
            system,
            output_config,
            tools,
            tool_choice,
        }
    }
}
