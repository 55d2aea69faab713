//! The OpenAI-compatible client against loopback servers that judge each request the way vLLM,
//! Ollama and Azure OpenAI do, with their real 400 (and Ollama's 500) bodies: `LLM_STRUCTURED`
//! steps down and remembers it, exactly one max-tokens field goes out, and `LLM_TEMPERATURE`.

use super::fake::{FakeProvider, Judge, Reply};
use super::*;
use grove_common::config::{MaxTokensField, StructuredOutput};
use grove_worker::llm::LlmError;

fn completion(fingerprint: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": "model-under-test", "system_fingerprint": fingerprint,
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": r#"{"reply":"Fix onboarding first."}"#}}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 30, "total_tokens": 120}
        }),
    )
}

fn format_type(body: &Value) -> Option<&str> {
    body["response_format"]["type"].as_str()
}

/// vLLM before `json_schema` support: pydantic refuses the literal, in vLLM's top-level error.
fn vllm(body: &Value) -> Reply {
    if format_type(body) == Some("json_schema") {
        return Reply::json(
            400,
            json!({
                "object": "error",
                "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]",
                "type": "BadRequestError", "param": null, "code": 400
            }),
        );
    }
    completion("")
}

/// Ollama's `/v1` with a schema its grammar converter cannot take: a 500 through its OpenAI layer.
fn ollama(body: &Value) -> Reply {
    if format_type(body) == Some("json_schema") {
        return Reply::json(
            500,
            json!({"error": {"message": "invalid JSON schema in format", "type": "api_error", "param": null, "code": null}}),
        );
    }
    completion("fp_ollama")
}

/// Azure OpenAI on an api-version before 2024-08-01-preview, fronting a model that refuses
/// `max_tokens` (o-series): either mistake is a 400.
fn azure(body: &Value) -> Reply {
    if body.get("max_tokens").is_some() {
        return Reply::json(
            400,
            json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
        );
    }
    if format_type(body) == Some("json_schema") {
        return Reply::json(
            400,
            json!({"error": {"code": "BadRequest", "message": "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later", "param": null, "type": null}}),
        );
    }
    completion("")
}

/// An older OpenAI model behind a gateway: neither structured mode exists.
fn no_structured_output(body: &Value) -> Reply {
    match format_type(body) {
        Some(kind) => Reply::json(
            400,
            json!({"error": {"message": format!("Invalid parameter: 'response_format' of type '{kind}' is not supported with this model."), "type": "invalid_request_error", "param": "response_format", "code": null}}),
        ),
        None => completion(""),
    }
}

async fn start(
    judge: Judge,
    tune: impl FnOnce(&mut LlmConfig),
) -> (FakeProvider, Arc<dyn LlmProvider>) {
    let fake = FakeProvider::judging(judge).await;
    let mut config = config(
        LlmProviderKind::OpenAi,
        format!("{}/v1", fake.origin),
        Some(KEY),
    );
    tune(&mut config);
    (fake, configured(config, policy()))
}

fn system_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn vllm_without_json_schema_steps_down_to_json_object_once_for_the_process() {
    let logs = Logs::capture();
    let (fake, client) = start(vllm, |_| {}).await;

    let first = client.complete(&request()).await.unwrap();
    let second = client.complete(&request()).await.unwrap();

    assert_eq!(first.json, json!({"reply": "Fix onboarding first."}));
    assert_eq!((first.attempts, second.attempts, fake.calls()), (2, 1, 3));
    let kinds: Vec<_> = fake
        .requests()
        .iter()
        .map(|r| format_type(&r.body).map(str::to_owned))
        .collect();
    assert_eq!(
        kinds,
        [
            Some("json_schema".into()),
            Some("json_object".into()),
            Some("json_object".into())
        ]
    );
    let stepped = fake.request(1).body;
    assert!(
        system_text(&stepped).contains("JSON Schema"),
        "the schema travels in the prompt"
    );
    assert!(system_text(&stepped).contains(&schema().to_string()));
    for r in fake.requests() {
        assert_eq!(r.body["max_tokens"], 800, "vLLM reads max_tokens");
        assert!(
            r.body.get("max_completion_tokens").is_none(),
            "exactly one budget field"
        );
    }
    logs.assert_clean("stepping down");
}

#[tokio::test]
async fn ollama_that_cannot_compile_the_schema_steps_down_without_retrying_its_500() {
    let (fake, client) = start(ollama, |_| {}).await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!(
        (response.attempts, fake.calls()),
        (2, 2),
        "the grammar 500 is final, not retried three times"
    );
    assert_eq!(format_type(&fake.request(1).body), Some("json_object"));
    assert_eq!(
        fake.request(1).body["max_tokens"],
        800,
        "Ollama reads only max_tokens"
    );
}

#[tokio::test]
async fn azure_gets_max_completion_tokens_alone_and_an_old_api_version_steps_down() {
    let (fake, client) = start(azure, |c| {
        c.max_tokens_field = MaxTokensField::MaxCompletionTokens;
    })
    .await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!((response.attempts, fake.calls()), (2, 2));
    for r in fake.requests() {
        assert_eq!(r.body["max_completion_tokens"], 800);
        assert!(r.body.get("max_tokens").is_none());
    }
    assert_eq!(format_type(&fake.request(1).body), Some("json_object"));
}

#[tokio::test]
async fn azure_refuses_max_tokens_which_is_why_its_hosts_get_the_other_field() {
    // The field a generic server reads: refused once, and not mistaken for a missing feature.
    let (fake, client) = start(azure, |c| c.max_tokens_field = MaxTokensField::MaxTokens).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(&err, LlmError::BadRequest { status: 400, message } if message.contains("max_completion_tokens")),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn a_server_without_json_object_either_ends_with_the_schema_in_the_prompt() {
    let (fake, client) = start(no_structured_output, |_| {}).await;

    client.complete(&request()).await.unwrap();
    client.complete(&request()).await.unwrap();

    assert_eq!(
        fake.calls(),
        4,
        "two refusals, then prompt mode for both calls"
    );
    let last = fake.request(3).body;
    assert!(last.get("response_format").is_none(), "{last}");
    assert!(system_text(&last).contains(&schema().to_string()));
}

#[tokio::test]
async fn a_bad_schema_is_not_read_as_a_missing_feature() {
    fn strict_openai(_: &Value) -> Reply {
        Reply::json(
            400,
            json!({"error": {"message": "Invalid schema for response_format 'grove_diagnose_growth': In context=(), 'additionalProperties' is required to be supplied and to be false.", "type": "invalid_request_error", "param": "response_format", "code": null}}),
        )
    }
    let (fake, client) = start(strict_openai, |_| {}).await;

    for _ in 0..2 {
        let err = client.complete(&request()).await.unwrap_err();
        assert!(
            matches!(err, LlmError::BadRequest { status: 400, .. }),
            "{err:?}"
        );
    }
    assert_eq!(fake.calls(), 2);
    assert!(
        fake.requests()
            .iter()
            .all(|r| format_type(&r.body) == Some("json_schema"))
    );
}

#[tokio::test]
async fn configured_modes_and_temperature_shape_the_request() {
    let (fake, client) = start(vllm, |c| {
        c.structured = StructuredOutput::JsonObject;
        c.temperature = Some(1.2);
    })
    .await;
    client.complete(&request()).await.unwrap();
    let body = fake.request(0).body;
    assert_eq!(
        (format_type(&body), body["temperature"].as_f64()),
        // The temperature as configured: serialised from the f32, not widened to 1.2000000476….
        (Some("json_object"), Some(1.2))
    );

    let (fake, client) = start(vllm, |c| {
        c.structured = StructuredOutput::Prompt;
        c.temperature = None;
    })
    .await;
    client.complete(&request()).await.unwrap();
    let body = fake.request(0).body;
    assert!(
        body.get("response_format").is_none() && body.get("temperature").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn anthropic_takes_the_temperature_and_prompt_mode() {
    fn messages(_: &Value) -> Reply {
        Reply::json(
            200,
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": r#"{"reply":"Fix onboarding first."}"#}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
        )
    }
    let fake = FakeProvider::judging(messages).await;
    let mut config = config(LlmProviderKind::Anthropic, fake.origin.clone(), Some(KEY));
    config.structured = StructuredOutput::Prompt;
    config.temperature = Some(0.7);
    configured(config, policy())
        .complete(&request())
        .await
        .unwrap();

    let body = fake.request(0).body;
    // The operator's 0.7 goes on the wire as written, not widened to 0.699999988.
    assert_eq!(body["temperature"].as_f64(), Some(0.7));
    assert!(
        body.get("output_config").is_none() && body.get("tools").is_none(),
        "{body}"
    );
    assert!(
        body["system"]
            .as_str()
            .unwrap()
            .contains(&schema().to_string())
    );
}
