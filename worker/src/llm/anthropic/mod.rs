//! Anthropic Messages. The schema goes in `output_config.format` (structured outputs, GA since
//! 2026-01); models or gateways that do not know that field get forced tool use instead. With
//! `LLM_STRUCTURED=prompt` the schema travels in the system prompt alone.

mod answer;
mod body;

use super::limits::Limits;
use super::transport::{self, with_retries};
use super::{LlmError, LlmProvider, LlmRequest, LlmResponse, RetryPolicy, Usage};
use crate::retry::Failure;
use answer::read_answer;
use body::Body;
use grove_common::config::{LlmConfig, StructuredOutput};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const API_VERSION: &str = "2023-06-01";
const TOOL_DESCRIPTION: &str =
    "Record the complete answer. The input must match this schema exactly.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `output_config.format`: JSON text in the first text block.
    Native,
    /// One forced tool whose `input_schema` is the schema: the answer is the `tool_use` input.
    Tool,
    /// The schema in the system prompt; JSON text in the first text block.
    Prompt,
}

pub struct AnthropicProvider {
    client: reqwest::Client,
    url: reqwest::Url,
    /// Built once; the key inside is marked sensitive so no header dump can print it.
    headers: HeaderMap,
    /// The provider's concurrency cap, token budget and rate-limit pauses (`limits`).
    limits: Limits,
    model: String,
    retry: RetryPolicy,
    temperature: Option<f32>,
    /// `LLM_STRUCTURED=prompt`: never ask the API to enforce the schema.
    prompt_only: bool,
    /// Set when the API said it does not support `output_config`, so later calls skip the probe.
    tool_fallback: AtomicBool,
}

impl AnthropicProvider {
    /// `config.base_url` is the host root, e.g. `https://api.anthropic.com`.
    pub fn new(config: &LlmConfig, retry: RetryPolicy) -> Result<Self, LlmError> {
        // Tolerate a base URL that already ends in the version, a common copy-paste.
        let base = config.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let url = transport::endpoint(base, "/v1/messages")?;
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(key.expose()).map_err(|_| LlmError::Config {
                message: "LLM_API_KEY contains characters an HTTP header cannot carry".into(),
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(Self {
            client: transport::client(config.http2, retry.request_timeout)?,
            url,
            headers,
            limits: Limits::new(config.max_concurrency, config.tokens_per_min),
            model: config.model.clone(),
            retry,
            temperature: config.temperature,
            prompt_only: config.structured == StructuredOutput::Prompt,
            tool_fallback: AtomicBool::new(false),
        })
    }

    /// The request body, borrowing the call's prompt, messages and schema: a body is held for
    /// the whole wait on the model (a transport retry sends it again), and a copy of each was
    /// memory per call in flight (issue 31).
    fn body<'r>(&'r self, request: &'r LlmRequest, mode: Mode) -> Body<'r> {
        Body::new(&self.model, self.temperature, request, mode)
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
        mode: Mode,
        timeout: Duration,
    ) -> Result<(Value, Usage), Failure<LlmError>> {
        let raw =
            transport::post_json(&self.target(), body, u64::from(body.max_tokens), timeout).await?;
        read_answer(&raw, mode).map_err(Failure::Final)
    }

    /// One call in one mode, transport retries included.
    async fn call(
        &self,
        request: &LlmRequest,
        mode: Mode,
    ) -> (Result<(Value, Usage), LlmError>, u32) {
        let body = self.body(request, mode);
        with_retries(&self.retry, request.deadline, self.name(), |t| {
            self.attempt(&body, mode, t)
        })
        .await
    }
}

#[async_trait::async_trait]
impl LlmProvider for AnthropicProvider {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    /// Forced tool use holds the answer to the schema as `output_config` does.
    fn enforces_schema(&self) -> bool {
        !self.prompt_only
    }

    #[tracing::instrument(name = "llm.complete", skip_all, fields(otel.kind = "client", gen_ai.system = "anthropic", gen_ai.operation.name = "chat", gen_ai.request.model = %self.model, schema = %request.schema_name))]
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut attempts = 0;
        let mut outcome = None;
        if self.prompt_only {
            let (result, made) = self.call(request, Mode::Prompt).await;
            attempts += made;
            outcome = Some(result);
        } else if !self.tool_fallback.load(Ordering::Relaxed) {
            let (result, made) = self.call(request, Mode::Native).await;
            attempts += made;
            match result {
                Err(LlmError::BadRequest {
                    status: 400,
                    message,
                }) if format_unsupported(&message) => {
                    self.tool_fallback.store(true, Ordering::Relaxed);
                    tracing::warn!(model = %self.model, error = %message,
                        "output_config is not supported here; using forced tool use from now on");
                }
                other => outcome = Some(other),
            }
        }
        let result = match outcome {
            Some(result) => result,
            None => {
                let (result, made) = self.call(request, Mode::Tool).await;
                attempts += made;
                result
            }
        };
        LlmResponse::finish(result, attempts)
    }

    async fn probe(&self) -> Result<(), LlmError> {
        let body = json!({
            "model": self.model,
            "max_tokens": super::probe::PROBE_MAX_TOKENS,
            "messages": [{"role": "user", "content": super::probe::PROBE_PROMPT}],
        });
        super::probe::attempt(&self.target(), &body).await
    }
}

/// Whether a 400 says the request's output format is unknown to this model or gateway (rather
/// than that our schema is wrong, which tool use would not fix). Wording varies, so match loosely.
fn format_unsupported(message: &str) -> bool {
    let m = message.to_lowercase();
    let about_format = [
        "output_config",
        "output_format",
        "output format",
        "structured output",
    ]
    .iter()
    .any(|p| m.contains(p));
    let unsupported = [
        "not supported",
        "unsupported",
        "does not support",
        "not permitted",
        "extra inputs",
        "not available",
        "unknown field",
        "unexpected",
    ]
    .iter()
    .any(|p| m.contains(p));
    let about_schema = m.replace("json_schema", "").contains("schema");
    about_format && unsupported && !about_schema
}

#[cfg(test)]
mod tests {
    use super::format_unsupported;

    #[test]
    fn unsupported_format_is_told_apart_from_a_bad_schema() {
        assert!(format_unsupported(
            "output_config: Extra inputs are not permitted"
        ));
        assert!(format_unsupported(
            "'claude-3-haiku-20240307' does not support structured outputs"
        ));
        assert!(format_unsupported(
            "output_config.format is not supported for this model"
        ));
        assert!(!format_unsupported(
            "output_config.format.schema: minLength is not supported"
        ));
        assert!(!format_unsupported("max_tokens: must be at most 8192"));
    }
}
