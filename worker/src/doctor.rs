//! The worker's half of `worker check` (and of `api check` when the api runs the jobs itself):
//! the model answers a short request in the structured-output mode it is configured for, and
//! Twilio accepts our credentials and knows our sender.

use crate::{
    llm::{self, ChatMessage, LlmError, LlmRequest, ProviderSchema, RetryPolicy},
    sms::twilio_probe,
};
use grove_common::{
    config::{Config, LlmConfig, SmsProviderKind, StructuredOutput},
    doctor::{self, Check, bounded},
};
use serde_json::json;
use std::{sync::Arc, time::Duration};

/// Every probe a process that runs jobs depends on: the database, Redis, the model and SMS.
pub async fn checks(config: &Config) -> Vec<Check> {
    let mut checks = vec![
        grove_migrations::check::database(config).await,
        doctor::redis(config.redis_url.as_ref()).await,
    ];
    checks.extend(providers(config).await);
    checks
}

/// The model and the SMS provider only (the api's own checks cover the database and Redis).
pub async fn providers(config: &Config) -> Vec<Check> {
    let mut checks = vec![match &config.llm {
        Some(llm) => model(llm).await,
        None => Check::skip(
            "model",
            "LLM_PROVIDER unset: paid coaching calls answer 503 unavailable",
        ),
    }];
    match (&config.sms_provider, &config.twilio) {
        (SmsProviderKind::Twilio, Some(twilio)) => {
            checks.extend(twilio_probe::checks(twilio).await)
        }
        _ => checks.push(Check::skip(
            "twilio",
            "DEVELOPMENT: SMS_PROVIDER=outbox, texts are stored and logged, never sent",
        )),
    }
    checks
}

/// One probe attempt, no waiting between retries: the doctor reports, it does not ride out.
const PROBE_POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 1,
    base_delay: Duration::from_millis(0),
    max_delay: Duration::from_millis(0),
    request_timeout: Duration::from_secs(20),
};

async fn model(config: &LlmConfig) -> Check {
    const NAME: &str = "model";
    if let Err(e) = config.require_key() {
        return Check::fail(NAME, e.to_string(), "set LLM_API_KEY");
    }
    let provider = match llm::from_config(config, PROBE_POLICY) {
        Ok(p) => p,
        Err(e) => return Check::fail(NAME, e.to_string(), "correct LLM_BASE_URL"),
    };
    let request = LlmRequest {
        system: "Answer with the JSON object {\"ok\": true} and nothing else.".into(),
        messages: vec![ChatMessage::user("ping")],
        schema_name: "doctor_probe".into(),
        schema: Arc::new(ProviderSchema::new(json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": false,
        }))),
        max_output_tokens: 16,
        deadline: None,
    };
    let fix_model = format!("check LLM_MODEL ({}) and LLM_BASE_URL", config.model);
    bounded(NAME, &fix_model, async {
        let answered = provider.complete(&request).await;
        let model = &config.model;
        match answered {
            Ok(_) if provider.enforces_schema() => {
                Check::pass(NAME, format!("{model} answers, structured output enforced"))
            }
            Ok(_) if config.structured != StructuredOutput::Strict => Check::pass(
                NAME,
                format!("{model} answers; the schema is not enforced (LLM_STRUCTURED={:?}), answers are checked after the fact", config.structured),
            ),
            Ok(_) => Check::fail(
                NAME,
                format!("{model} answers but does not support structured output (a JSON Schema it enforces)"),
                "use a model with structured outputs, or set LLM_STRUCTURED=json_object to accept answers checked only after the fact",
            ),
            Err(LlmError::Auth { status, .. }) => Check::fail(
                NAME,
                format!("the provider refused LLM_API_KEY (HTTP {status})"),
                "check LLM_API_KEY and that it may use this model",
            ),
            Err(LlmError::Quota { message }) => Check::fail(NAME, format!("out of quota: {message}"), "add credit or raise the spend limit"),
            Err(e @ LlmError::BadRequest { .. }) => Check::fail(NAME, e.to_string(), fix_model.clone()),
            // The probe asks for 16 tokens: an answer cut there still proves the model answers.
            Err(LlmError::Truncated { .. }) if provider.enforces_schema() => {
                Check::pass(NAME, format!("{model} answers, structured output enforced"))
            }
            Err(e) => Check::fail(NAME, e.to_string(), "check LLM_BASE_URL and the provider's status"),
        }
    })
    .await
}
