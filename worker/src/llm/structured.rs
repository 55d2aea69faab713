//! How the answer's JSON Schema reaches the model (`LLM_STRUCTURED`), and stepping down when a
//! server says it cannot do what was asked: `strict` → `json_object` → `prompt`. A step down is
//! remembered for the life of the process, so only the first call pays for the refused request.

use grove_common::config::StructuredOutput;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicU8, Ordering};

/// The mode in use, shared by every call of one client.
pub(super) struct Ladder {
    current: AtomicU8,
}

const ORDER: [StructuredOutput; 3] = [
    StructuredOutput::Strict,
    StructuredOutput::JsonObject,
    StructuredOutput::Prompt,
];

fn index(mode: StructuredOutput) -> u8 {
    match mode {
        StructuredOutput::Strict => 0,
        StructuredOutput::JsonObject => 1,
        StructuredOutput::Prompt => 2,
    }
}

impl Ladder {
    pub(super) fn new(start: StructuredOutput) -> Self {
        Self {
            current: AtomicU8::new(index(start)),
        }
    }

    pub(super) fn current(&self) -> StructuredOutput {
        ORDER[usize::from(self.current.load(Ordering::Relaxed)).min(2)]
    }

    /// The next mode down from `from` (a mode that `skip` leaves out is passed over), or `None`
    /// at the bottom. Concurrent calls that were refused in the same mode step down once.
    pub(super) fn step_down(
        &self,
        from: StructuredOutput,
        skip: Option<StructuredOutput>,
    ) -> Option<StructuredOutput> {
        let next = ORDER[usize::from(index(from)) + 1..]
            .iter()
            .copied()
            .find(|m| Some(*m) != skip)?;
        let _ = self.current.compare_exchange(
            index(from),
            index(next),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        Some(self.current())
    }
}

/// Wording of "this server cannot do that format" across servers: OpenAI and Azure OpenAI
/// ("… is not supported with this model", "… enabled only for api versions …"), vLLM and
/// other pydantic-based servers ("Input should be 'text' or 'json_object'"), TGI ("unknown
/// variant"), Ollama and llama.cpp (a schema they cannot turn into a grammar).
const UNSUPPORTED: &[&str] = &[
    "not supported",
    "unsupported",
    "does not support",
    "enabled only for",
    "input should be 'text'",
    "unknown variant",
    "must be one of",
    "not available",
];

/// Ollama (`invalid JSON schema in format`, answered as a 500) and llama.cpp (`failed to parse
/// grammar`) cannot turn this schema into a grammar. Retrying the same request cannot help.
pub(super) fn grammar_failed(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("invalid json schema in format") || m.contains("failed to parse grammar")
}

/// Whether a refused request says the server cannot do `mode` (so a lower mode may work), as
/// opposed to our schema being wrong for a server that can (OpenAI's "Invalid schema for
/// response_format …"), which stepping down would only hide.
pub(super) fn rejected(mode: StructuredOutput, status: u16, message: &str) -> bool {
    if !matches!(status, 400 | 422 | 500) {
        return false;
    }
    if grammar_failed(message) {
        return mode == StructuredOutput::Strict;
    }
    let m = message.to_lowercase();
    if status == 500 || m.contains("invalid schema for") {
        return false;
    }
    let about = match mode {
        StructuredOutput::Strict => ["json_schema", "json schema", "response_format"].as_slice(),
        StructuredOutput::JsonObject => ["json_object", "response_format"].as_slice(),
        StructuredOutput::Prompt => return false,
    };
    about.iter().any(|a| m.contains(a)) && UNSUPPORTED.iter().any(|u| m.contains(u))
}

/// The system prompt for a mode the provider does not enforce: the schema travels as text and
/// our own validation does the enforcing.
pub(super) fn schema_in_prompt(system: &str, schema: &RawValue) -> String {
    format!(
        "{system}\n\n# Answer format\n\nAnswer with one JSON object and nothing else: no text \
         before or after it and no Markdown fence. It must be valid against this JSON Schema:\n\
         {schema}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use StructuredOutput::{JsonObject, Prompt, Strict};

    #[test]
    fn the_ladder_steps_down_once_and_stops_at_prompt() {
        let ladder = Ladder::new(Strict);
        assert_eq!(ladder.step_down(Strict, None), Some(JsonObject));
        // A second call refused in strict mode at the same time does not skip a step.
        assert_eq!(ladder.step_down(Strict, None), Some(JsonObject));
        assert_eq!(ladder.step_down(JsonObject, None), Some(Prompt));
        assert_eq!(ladder.step_down(Prompt, None), None);
        assert_eq!(ladder.current(), Prompt);
        let anthropic = Ladder::new(Strict);
        assert_eq!(anthropic.step_down(Strict, Some(JsonObject)), Some(Prompt));
    }

    #[test]
    fn refusals_of_a_format_are_told_apart_from_a_bad_schema() {
        let azure = "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later";
        let vllm = "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]";
        let openai_model = "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.";
        for m in [azure, vllm, openai_model] {
            assert!(rejected(Strict, 400, m), "{m}");
        }
        assert!(rejected(Strict, 500, "invalid JSON schema in format"));
        assert!(!rejected(JsonObject, 500, "invalid JSON schema in format"));
        let bad_schema = "Invalid schema for response_format 'grove_x': In context=(), 'minLength' is not supported.";
        assert!(!rejected(Strict, 400, bad_schema));
        assert!(!rejected(Strict, 400, "max_tokens is too large: 20000"));
        assert!(!rejected(Strict, 503, azure));
        let no_json_mode =
            "'response_format' of type 'json_object' is not supported with this model.";
        assert!(rejected(JsonObject, 400, no_json_mode));
        assert!(!rejected(Prompt, 400, no_json_mode));
    }
}
