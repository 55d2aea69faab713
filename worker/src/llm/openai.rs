//! OpenAI-compatible Chat Completions: OpenAI itself, vLLM, llama.cpp's server, Ollama's `/v1`.
//! The schema goes in `response_format.json_schema` with `strict: true`.

use super::error::clip;
use super::retry::{Failure, with_retries};
use super::transport::{self, RawResponse};
use super::{LlmError, LlmProvider, LlmRequest, LlmResponse, RetryPolicy, Usage, parse_model_json};
use grove_common::config::Secret;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

pub struct OpenAiProvider {
    client: reqwest::Client,
    url: String,
    /// Built once; the key inside is marked sensitive so no header dump can print it.
    headers: HeaderMap,
    model: String,
    retry: RetryPolicy,
    /// Self-hosted servers may read only the older `max_tokens`, while OpenAI rejects that field
    /// on reasoning models; so it is sent everywhere except OpenAI's own host.
    send_max_tokens: bool,
}

impl OpenAiProvider {
    /// `base_url` includes the version prefix: `https://api.openai.com/v1`,
    /// `http://localhost:8000/v1`. No key: no `Authorization` header (self-hosted servers).
    pub fn new(
        base_url: &str,
        api_key: Option<Secret>,
        model: &str,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let url = transport::endpoint(base_url, "/chat/completions")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
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
        let openai_host = reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| h.eq_ignore_ascii_case("api.openai.com"))
            })
            .unwrap_or(false);
        Ok(Self {
            client: transport::client(retry.request_timeout)?,
            url,
            headers,
            model: model.to_owned(),
            retry,
            send_max_tokens: !openai_host,
        })
    }

    fn body(&self, request: &LlmRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        messages.extend(
            request
                .messages
                .iter()
                .map(|m| json!({"role": m.role.as_str(), "content": m.content})),
        );
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "strict": true,
                    "schema": request.schema,
                },
            },
            "max_completion_tokens": request.max_output_tokens,
        });
        if self.send_max_tokens {
            body["max_tokens"] = json!(request.max_output_tokens);
        }
        body
    }

    async fn attempt(&self, body: &Value) -> Result<(Value, Usage), Failure> {
        let raw = transport::post_json(
            &self.client,
            &self.url,
            self.headers.clone(),
            body,
            self.retry.request_timeout,
        )
        .await?;
        read_answer(&raw).map_err(Failure::Final)
    }
}

#[async_trait::async_trait]
impl LlmProvider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    #[tracing::instrument(name = "llm.complete", skip_all, fields(provider = "openai", model = %self.model, schema = %request.schema_name))]
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let body = self.body(request);
        let (result, attempts) =
            with_retries(&self.retry, self.name(), || self.attempt(&body)).await;
        let (json, usage) = result?;
        tracing::debug!(
            attempts,
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            "llm call completed"
        );
        Ok(LlmResponse {
            json,
            usage,
            attempts,
        })
    }
}

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
fn read_answer(raw: &RawResponse) -> Result<(Value, Usage), LlmError> {
    let invalid = |message: &str, usage| LlmError::InvalidOutput {
        message: message.to_owned(),
        usage,
    };
    let response: ChatResponse = serde_json::from_str(&raw.body)
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
