//! OpenAI-compatible Chat Completions: OpenAI itself, Azure OpenAI, vLLM, llama.cpp's server,
//! Ollama's `/v1`. With `LLM_STRUCTURED=strict` the schema goes in `response_format.json_schema`
//! with `strict: true`; a server that says it cannot do that gets `json_object`, then the schema
//! in the prompt alone (see `structured`).

mod answer;

use super::limits::Limits;
use super::structured::{self, Ladder};
use super::transport::{self, with_retries};
use super::{LlmError, LlmProvider, LlmRequest, LlmResponse, RetryPolicy, Usage};
use crate::retry::Failure;
use grove_common::config::{LlmConfig, MaxTokensField, StructuredOutput};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, value::RawValue};
use std::borrow::Cow;
use std::time::Duration;

pub struct OpenAiProvider {
    client: reqwest::Client,
    url: reqwest::Url,
    /// Built once; the key inside is marked sensitive so no header dump can print it.
    headers: HeaderMap,
    /// The provider's concurrency cap, token budget and rate-limit pauses (`limits`).
    limits: Limits,
    model: String,
    retry: RetryPolicy,
    /// `max_tokens` or `max_completion_tokens`: exactly one is sent.
    max_tokens_field: MaxTokens,
    temperature: Option<f32>,
    structured: Ladder,
}

impl OpenAiProvider {
    /// `config.base_url` includes the version prefix: `https://api.openai.com/v1`,
    /// `http://localhost:8000/v1`, `https://{resource}.openai.azure.com/openai/v1`. No key: no
    /// `Authorization` header (self-hosted servers).
    pub fn new(config: &LlmConfig, retry: RetryPolicy) -> Result<Self, LlmError> {
        let url = transport::endpoint(&config.base_url, "/chat/completions")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    LlmError::Config {
                        message: "LLM_API_KEY contains characters an HTTP header cannot carry"
                            .into(),
                    }
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let max_tokens_field = max_tokens_field(config.max_tokens_field, url.as_str());
        tracing::debug!(
            max_tokens_field = ?max_tokens_field,
            structured = ?config.structured,
            "openai-compatible client ready"
        );
        Ok(Self {
            client: transport::client(config.http2, retry.request_timeout)?,
            url,
            headers,
            limits: Limits::new(config.max_concurrency, config.tokens_per_min),
            model: config.model.clone(),
            retry,
            max_tokens_field,
            temperature: config.temperature,
            structured: Ladder::new(config.structured),
        })
    }

    fn body<'r>(&'r self, request: &'r LlmRequest, mode: StructuredOutput) -> Body<'r> {
        let system = match mode {
            StructuredOutput::Strict => Cow::Borrowed(&*request.system),
            _ => Cow::Owned(structured::schema_in_prompt(
                &request.system,
                request.schema.json(),
            )),
        };
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !system.is_empty() {
            messages.push(Message {
                role: "system",
                content: system,
            });
        }
        messages.extend(request.messages.iter().map(|m| Message {
            role: m.role.as_str(),
            content: Cow::Borrowed(m.content.as_str()),
        }));
        let limit = Some(request.max_output_tokens);
        let (max_tokens, max_completion_tokens) = match self.max_tokens_field {
            MaxTokens::Max => (limit, None),
            MaxTokens::MaxCompletion => (None, limit),
        };
        let response_format = match mode {
            StructuredOutput::Strict => Some(ResponseFormat::JsonSchema {
                json_schema: NamedSchema {
                    name: &request.schema_name,
                    strict: true,
                    schema: request.schema.json(),
                },
            }),
            StructuredOutput::JsonObject => Some(ResponseFormat::JsonObject),
            StructuredOutput::Prompt => None,
        };
        Body {
            model: &self.model,
            messages,
            max_tokens,
            max_completion_tokens,
            temperature: self.temperature,
            response_format,
        }
    }

    /// Where each attempt goes, with this provider's limits.
    fn target(&self) -> transport::Target<'_> {
        transport::Target {
            client: &self.client,
            url: &self.url,
            headers: &self.headers,
            limits: &self.limits,
        }
    }

    async fn attempt(
        &self,
        body: &Body<'_>,
        timeout: Duration,
    ) -> Result<(Value, Usage), Failure<LlmError>> {
        let raw = transport::post_json(
            &self.target(),
            body,
            u64::from(body.max_tokens.or(body.max_completion_tokens).unwrap_or(0)),
            timeout,
        )
        .await?;
        answer::read_answer(&raw).map_err(Failure::Final)
    }
}

/// A chat completion request, borrowing from the request it is written for: the schema goes in
/// as the JSON text prepared once (`ProviderSchema`), the prompt and messages uncopied.
#[derive(serde::Serialize)]
struct Body<'r> {
    model: &'r str,
    messages: Vec<Message<'r>>,
    /// Exactly one of the two token limits is sent (`max_tokens_field`).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'r>>,
}

#[derive(serde::Serialize)]
struct Message<'r> {
    role: &'static str,
    content: Cow<'r, str>,
}

#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat<'r> {
    JsonSchema { json_schema: NamedSchema<'r> },
    JsonObject,
}

#[derive(serde::Serialize)]
struct NamedSchema<'r> {
    name: &'r str,
    strict: bool,
    schema: &'r RawValue,
}

/// Which token-limit field a server reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MaxTokens {
    /// `max_tokens`: vLLM, Ollama, llama.cpp and most others.
    Max,
    /// `max_completion_tokens`: OpenAI and Azure OpenAI (their reasoning models refuse the other).
    MaxCompletion,
}

/// `auto`: OpenAI's own API and Azure OpenAI take `max_completion_tokens` (their reasoning
/// models refuse `max_tokens`); every other server gets `max_tokens`, the field vLLM, Ollama and
/// llama.cpp read.
fn max_tokens_field(setting: MaxTokensField, url: &str) -> MaxTokens {
    match setting {
        MaxTokensField::MaxTokens => MaxTokens::Max,
        MaxTokensField::MaxCompletionTokens => MaxTokens::MaxCompletion,
        MaxTokensField::Auto => {
            let host = reqwest::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_default();
            if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
                MaxTokens::MaxCompletion
            } else {
                MaxTokens::Max
            }
        }
    }
}

#[async_trait::async_trait]
impl LlmProvider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn enforces_schema(&self) -> bool {
        self.structured.current() == StructuredOutput::Strict
    }

    #[tracing::instrument(name = "llm.complete", skip_all, fields(otel.kind = "client", gen_ai.system = "openai", gen_ai.operation.name = "chat", gen_ai.request.model = %self.model, schema = %request.schema_name))]
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut attempts = 0;
        let result = loop {
            let mode = self.structured.current();
            let body = self.body(request, mode);
            let (result, made) = with_retries(&self.retry, request.deadline, self.name(), |t| {
                self.attempt(&body, t)
            })
            .await;
            attempts += made;
            match result {
                Err(LlmError::BadRequest { status, message })
                    if structured::rejected(mode, status, &message) =>
                {
                    let Some(next) = self.structured.step_down(mode, None) else {
                        break Err(LlmError::BadRequest { status, message });
                    };
                    tracing::warn!(model = %self.model, from = ?mode, to = ?next, error = %message,
                        "the server cannot do this structured-output mode; stepping down for the rest of the process");
                }
                other => break other,
            }
        };
        LlmResponse::finish(result, attempts)
    }

    async fn probe(&self) -> Result<(), LlmError> {
        let mut body = serde_json::json!({
            "model": self.model,
            "messages": [{"role": "user", "content": super::probe::PROBE_PROMPT}],
        });
        let field = match self.max_tokens_field {
            MaxTokens::Max => "max_tokens",
            MaxTokens::MaxCompletion => "max_completion_tokens",
        };
        body[field] = super::probe::PROBE_MAX_TOKENS.into();
        super::probe::attempt(&self.target(), &body).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_max_completion_tokens_only_for_openai_and_azure_hosts() {
        let auto = |url| max_tokens_field(MaxTokensField::Auto, url);
        assert_eq!(
            auto("https://api.openai.com/v1/chat/completions"),
            MaxTokens::MaxCompletion
        );
        assert_eq!(
            auto("https://my-res.openai.azure.com/openai/v1/chat/completions"),
            MaxTokens::MaxCompletion
        );
        for url in [
            "http://127.0.0.1:8000/v1/chat/completions",
            "http://localhost:11434/v1/chat/completions",
            "https://openrouter.ai/api/v1/chat/completions",
            "https://api.openai.com.evil.example/v1/chat/completions",
        ] {
            assert_eq!(auto(url), MaxTokens::Max, "{url}");
        }
        assert_eq!(
            max_tokens_field(MaxTokensField::MaxCompletionTokens, "http://127.0.0.1/v1"),
            MaxTokens::MaxCompletion
        );
    }
}
