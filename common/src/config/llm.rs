//! The model provider: `LLM_PROVIDER`, `LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`, how a
//! request is shaped: `LLM_TEMPERATURE`, `LLM_STRUCTURED` and `LLM_MAX_TOKENS_FIELD`, and how it
//! travels: `LLM_MAX_CONCURRENCY`, `LLM_TOKENS_PER_MIN` and `LLM_HTTP2`.

use super::{ConfigError, Http2, Secret, http2, invalid};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmProviderKind {
    /// OpenAI Chat Completions and compatible servers (vLLM, llama.cpp, Ollama, Azure OpenAI).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// How the answer's JSON Schema reaches the model (`LLM_STRUCTURED`). The client starts here and
/// steps down, for the rest of the process, when a server says it cannot do what was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StructuredOutput {
    /// The provider enforces the schema: OpenAI `json_schema` with `strict`, Anthropic
    /// `output_config.format` (or forced tool use where that is unknown).
    Strict,
    /// OpenAI `json_object`: valid JSON guaranteed, the schema given in the system prompt.
    JsonObject,
    /// Nothing enforced: the schema in the system prompt, the answer parsed and checked by us.
    Prompt,
}

/// Which field carries the output budget on an OpenAI-compatible server (`LLM_MAX_TOKENS_FIELD`).
/// Exactly one is sent: some servers reject a request that carries both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens` on api.openai.com and Azure OpenAI (`*.openai.azure.com`),
    /// `max_tokens` everywhere else (vLLM, Ollama and llama.cpp read only that one).
    Auto,
    MaxTokens,
    MaxCompletionTokens,
}

/// `LLM_TEMPERATURE` when unset: low, for consistent structured answers, yet not greedy.
pub const DEFAULT_TEMPERATURE: f32 = 0.3;

#[derive(Clone, Debug)]
pub struct LlmConfig {
    pub provider: LlmProviderKind,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub model: String,
    /// `None` (`LLM_TEMPERATURE=none`): the field is left out and the provider's default applies
    /// (reasoning models accept no other value).
    pub temperature: Option<f32>,
    pub structured: StructuredOutput,
    /// Read by the OpenAI-compatible client only; Anthropic always takes `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// `LLM_MAX_CONCURRENCY`: requests to the provider one process has open at once (None: as
    /// many as its jobs, `WORKER_CONCURRENCY`).
    pub max_concurrency: Option<usize>,
    /// `LLM_TOKENS_PER_MIN`: tokens one process sends and asks for a minute (None: no budget of
    /// our own; the provider's rate-limit headers still pause requests).
    pub tokens_per_min: Option<u64>,
    /// `LLM_HTTP2`: over plain `http://`, HTTP/1.1 (a connection per request in flight) or h2c.
    pub http2: Http2,
}

impl LlmConfig {
    /// A configuration with every request-shaping setting at its default.
    pub fn new(provider: LlmProviderKind, base_url: &str, api_key: Option<Secret>) -> Self {
        let (_, model) = defaults(provider);
        Self {
            provider,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
            temperature: Some(DEFAULT_TEMPERATURE),
            structured: StructuredOutput::Strict,
            max_tokens_field: MaxTokensField::Auto,
            max_concurrency: None,
            tokens_per_min: None,
            http2: Http2::Auto,
        }
    }
}

impl LlmConfig {
    /// Fails when this provider needs `LLM_API_KEY` and none is set. Hosted APIs need a key; a
    /// self-hosted OpenAI-compatible server at `LLM_BASE_URL` may not. Asked by every process
    /// that builds a model client (a `worker`, or the api running jobs in-process), not by
    /// configuration itself: the api of the distributed mode never calls the model.
    pub fn require_key(&self) -> Result<(), ConfigError> {
        let (default_url, _) = defaults(self.provider);
        let needs_key = self.provider == LlmProviderKind::Anthropic || self.base_url == default_url;
        if needs_key && self.api_key.is_none() {
            return Err(invalid(
                "LLM_API_KEY",
                "required for this LLM_PROVIDER in a process that calls the model",
            ));
        }
        Ok(())
    }
}

fn defaults(provider: LlmProviderKind) -> (&'static str, &'static str) {
    match provider {
        LlmProviderKind::OpenAi => ("https://api.openai.com/v1", "gpt-4o-mini"),
        LlmProviderKind::Anthropic => ("https://api.anthropic.com", "claude-sonnet-4-5"),
    }
}

pub(super) fn read(
    var: &impl Fn(&str) -> Option<String>,
) -> Result<Option<LlmConfig>, ConfigError> {
    let Some(provider) = var("LLM_PROVIDER") else {
        return Ok(None);
    };
    let provider = match provider.as_str() {
        "openai" => LlmProviderKind::OpenAi,
        "anthropic" => LlmProviderKind::Anthropic,
        other => {
            return Err(invalid(
                "LLM_PROVIDER",
                format!("expected openai or anthropic, got {other:?}"),
            ));
        }
    };
    let base_url = var("LLM_BASE_URL");
    let api_key = var("LLM_API_KEY").map(Secret::new);
    // Hosted APIs need a key (`LlmConfig::require_key`), but only in a process that calls the
    // model: an api whose jobs run in `worker` processes sells coaching without one.
    let (default_url, _) = defaults(provider);
    let mut config = LlmConfig::new(
        provider,
        base_url.as_deref().unwrap_or(default_url),
        api_key,
    );
    if let Some(model) = var("LLM_MODEL") {
        config.model = model;
    }
    config.temperature = temperature(provider, var("LLM_TEMPERATURE"))?;
    config.structured = match var("LLM_STRUCTURED").as_deref() {
        None | Some("strict") => StructuredOutput::Strict,
        Some("json_object") if provider == LlmProviderKind::Anthropic => {
            return Err(invalid(
                "LLM_STRUCTURED",
                "json_object is an OpenAI-compatible mode; use strict or prompt with anthropic",
            ));
        }
        Some("json_object") => StructuredOutput::JsonObject,
        Some("prompt") => StructuredOutput::Prompt,
        Some(other) => {
            return Err(invalid(
                "LLM_STRUCTURED",
                format!("expected strict, json_object or prompt, got {other:?}"),
            ));
        }
    };
    config.max_concurrency = positive(var, "LLM_MAX_CONCURRENCY", 1_000_000)?;
    config.tokens_per_min = positive(var, "LLM_TOKENS_PER_MIN", u64::MAX)?;
    config.max_tokens_field = match var("LLM_MAX_TOKENS_FIELD").as_deref() {
        None | Some("auto") => MaxTokensField::Auto,
        Some("max_tokens") => MaxTokensField::MaxTokens,
        Some("max_completion_tokens") => MaxTokensField::MaxCompletionTokens,
        Some(other) => {
            return Err(invalid(
                "LLM_MAX_TOKENS_FIELD",
                format!("expected auto, max_tokens or max_completion_tokens, got {other:?}"),
            ));
        }
    };
    config.http2 = http2::read(var, "LLM_HTTP2")?;
    Ok(Some(config))
}

/// OpenAI takes 0 to 2, Anthropic 0 to 1; `none` leaves the field out.
fn temperature(
    provider: LlmProviderKind,
    value: Option<String>,
) -> Result<Option<f32>, ConfigError> {
    let Some(raw) = value else {
        return Ok(Some(DEFAULT_TEMPERATURE));
    };
    if raw.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let max = match provider {
        LlmProviderKind::OpenAi => 2.0,
        LlmProviderKind::Anthropic => 1.0,
    };
    match raw.parse::<f32>() {
        Ok(t) if (0.0..=max).contains(&t) => Ok(Some(t)),
        _ => Err(invalid(
            "LLM_TEMPERATURE",
            format!(
                "expected a number from 0 to {max} for this LLM_PROVIDER (or none), got {raw:?}"
            ),
        )),
    }
}

/// An optional count from 1 to `max`.
fn positive<T>(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    max: T,
) -> Result<Option<T>, ConfigError>
where
    T: std::str::FromStr + PartialOrd + From<u8> + std::fmt::Display,
{
    let Some(raw) = var(name) else {
        return Ok(None);
    };
    match raw.parse::<T>() {
        Ok(n) if n >= T::from(1) && n <= max => Ok(Some(n)),
        _ => Err(invalid(
            name,
            format!("expected a whole number from 1 to {max}, got {raw:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_pairs(pairs: &[(&str, &str)]) -> Result<Option<LlmConfig>, ConfigError> {
        let var = |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        };
        read(&var)
    }

    const OPENAI: (&str, &str) = ("LLM_PROVIDER", "openai");
    const ANTHROPIC: (&str, &str) = ("LLM_PROVIDER", "anthropic");
    const KEY: (&str, &str) = ("LLM_API_KEY", "k");

    #[test]
    fn defaults_are_strict_auto_and_a_low_temperature() {
        let c = read_pairs(&[OPENAI, KEY]).unwrap().unwrap();
        assert_eq!(c.temperature, Some(DEFAULT_TEMPERATURE));
        assert_eq!(c.structured, StructuredOutput::Strict);
        assert_eq!(c.max_tokens_field, MaxTokensField::Auto);
        assert_eq!(c.base_url, "https://api.openai.com/v1");
        assert_eq!(c.model, "gpt-4o-mini");
    }

    #[test]
    fn temperature_is_checked_against_each_providers_range() {
        let t =
            |p, v| read_pairs(&[p, KEY, ("LLM_TEMPERATURE", v)]).map(|c| c.unwrap().temperature);
        assert_eq!(t(OPENAI, "1.5").unwrap(), Some(1.5));
        assert_eq!(t(ANTHROPIC, "0").unwrap(), Some(0.0));
        assert_eq!(t(ANTHROPIC, "none").unwrap(), None);
        for (p, v) in [
            (ANTHROPIC, "1.5"),
            (OPENAI, "2.1"),
            (OPENAI, "-0.1"),
            (OPENAI, "warm"),
        ] {
            let err = t(p, v).unwrap_err().to_string();
            assert!(
                err.starts_with("LLM_TEMPERATURE: expected a number from 0 to"),
                "{err}"
            );
        }
    }

    #[test]
    fn structured_and_max_tokens_field_name_their_variable() {
        let c = read_pairs(&[
            OPENAI,
            KEY,
            ("LLM_STRUCTURED", "json_object"),
            ("LLM_MAX_TOKENS_FIELD", "max_tokens"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.structured, StructuredOutput::JsonObject);
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxTokens);
        for (pairs, var) in [
            (
                vec![OPENAI, KEY, ("LLM_STRUCTURED", "grammar")],
                "LLM_STRUCTURED",
            ),
            (
                vec![ANTHROPIC, KEY, ("LLM_STRUCTURED", "json_object")],
                "LLM_STRUCTURED",
            ),
            (
                vec![OPENAI, KEY, ("LLM_MAX_TOKENS_FIELD", "both")],
                "LLM_MAX_TOKENS_FIELD",
            ),
        ] {
            let err = read_pairs(&pairs).unwrap_err().to_string();
            assert!(err.starts_with(var), "{err}");
        }
    }

    #[test]
    fn http2_is_read_from_llm_http2() {
        let c = read_pairs(&[OPENAI, KEY, ("LLM_HTTP2", "prior-knowledge")]).unwrap();
        assert_eq!(c.unwrap().http2, Http2::PriorKnowledge);
        assert_eq!(
            read_pairs(&[OPENAI, KEY]).unwrap().unwrap().http2,
            Http2::Auto
        );
        let err = read_pairs(&[OPENAI, KEY, ("LLM_HTTP2", "yes")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LLM_HTTP2: expected auto or prior-knowledge, got \"yes\""
        );
    }
}
