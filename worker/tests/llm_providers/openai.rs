//! OpenAI-compatible Chat Completions against a fake that speaks its wire format.

use super::fake::{FakeProvider, Reply};
use super::*;
use grove_worker::llm::{LlmError, Usage};
use std::time::Instant;

fn answer(content: Value, finish: &str) -> Value {
    answer_with_refusal(content, Value::Null, finish)
}

fn answer_with_refusal(content: Value, refusal: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "model-under-test",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "finish_reason": finish
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 45, "total_tokens": 165}
    })
}

fn ok() -> Reply {
    Reply::json(
        200,
        answer(json!(r#"{"reply":"Fix onboarding first."}"#), "stop"),
    )
}

fn error(status: u16, message: &str, kind: &str, code: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

const USAGE: Usage = Usage {
    input_tokens: 120,
    output_tokens: 45,
};

async fn start(script: Vec<Reply>) -> (FakeProvider, Arc<dyn LlmProvider>) {
    let fake = FakeProvider::start(script).await;
    let client = provider(
        LlmProviderKind::OpenAi,
        format!("{}/v1", fake.origin),
        Some(KEY),
        policy(),
    );
    (fake, client)
}

#[tokio::test]
async fn openai_valid_answer_is_parsed_with_usage_from_a_strict_schema_request() {
    let logs = Logs::capture();
    let (fake, client) = start(vec![ok()]).await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!(response.json, json!({"reply": "Fix onboarding first."}));
    assert_eq!(
        (response.usage, response.attempts, fake.calls()),
        (USAGE, 1, 1)
    );
    let sent = fake.request(0);
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        header(&sent, "authorization").unwrap(),
        format!("Bearer {KEY}")
    );
    let body = &sent.body;
    assert_eq!(body["model"], "model-under-test");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "grove_diagnose_growth");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(format["json_schema"]["schema"], schema());
    // Not OpenAI's or Azure's host: exactly one budget field, the one self-hosted servers read.
    assert_eq!(body["max_tokens"], 800);
    assert!(body.get("max_completion_tokens").is_none(), "{body}");
    // Written as configured (0.3), not widened from f32 (0.30000001192092896).
    assert_eq!(
        body["temperature"].to_string(),
        grove_common::config::DEFAULT_TEMPERATURE.to_string()
    );
    logs.assert_clean("llm call completed");
}

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization_header() {
    let fake = FakeProvider::start(vec![ok()]).await;
    let client = provider(
        LlmProviderKind::OpenAi,
        format!("{}/v1/", fake.origin),
        None,
        policy(),
    );

    client.complete(&request()).await.unwrap();

    assert_eq!(header(&fake.request(0), "authorization"), None);
}

#[tokio::test]
async fn openai_rate_limit_waits_for_retry_after_then_succeeds() {
    let logs = Logs::capture();
    let limited = error(
        429,
        "Rate limit reached for requests",
        "requests",
        "rate_limit_exceeded",
    )
    .header("retry-after", "1");
    let (fake, client) = start(vec![limited, ok()]).await;

    let started = Instant::now();
    let response = client.complete(&request()).await.unwrap();

    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "retry-after was not honoured"
    );
    assert_eq!((response.attempts, fake.calls()), (2, 2));
    logs.assert_clean("retrying");
}

#[tokio::test]
async fn openai_server_error_is_retried_then_succeeds() {
    let (fake, client) = start(vec![
        error(500, "The server had an error", "server_error", ""),
        ok(),
    ])
    .await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!((response.attempts, fake.calls()), (2, 2));
    assert_eq!(response.usage, USAGE);
}

#[tokio::test]
async fn openai_persistent_server_error_is_upstream_after_max_attempts() {
    let (fake, client) = start(vec![error(503, "Slow Down", "server_error", "")]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(
            err,
            LlmError::Upstream {
                status: Some(503),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 3);
}

#[tokio::test]
async fn openai_insufficient_quota_is_final_after_one_call() {
    let quota = error(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    );
    let (fake, client) = start(vec![quota, ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(err, LlmError::Quota { .. }), "{err:?}");
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn openai_unauthorized_is_an_auth_error_after_one_call() {
    let (fake, client) = start(vec![error(
        401,
        "Incorrect API key provided",
        "invalid_request_error",
        "invalid_api_key",
    )])
    .await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn openai_refusal_is_final_after_one_call_and_keeps_its_usage() {
    let refused = answer_with_refusal(Value::Null, json!("I can't help with that."), "stop");
    let (fake, client) = start(vec![Reply::json(200, refused), ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(&err, LlmError::Refusal { message, .. } if message.contains("can't help")));
    assert_eq!((err.usage(), fake.calls()), (USAGE, 1));
}

#[tokio::test]
async fn openai_content_filter_is_a_refusal() {
    let (fake, client) = start(vec![Reply::json(
        200,
        answer(Value::Null, "content_filter"),
    )])
    .await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(err, LlmError::Refusal { .. }), "{err:?}");
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn openai_length_finish_is_truncated_after_one_call() {
    let cut = answer(json!(r#"{"reply":"Fix onboa"#), "length");
    let (fake, client) = start(vec![Reply::json(200, cut), ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(err, LlmError::Truncated { usage } if usage == USAGE),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn openai_non_json_content_is_invalid_output() {
    let prose = answer(json!("Sure! First, fix onboarding."), "stop");
    let (fake, client) = start(vec![Reply::json(200, prose), ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(err, LlmError::InvalidOutput { usage, .. } if usage == USAGE),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn openai_stalled_upstream_times_out_and_is_retried() {
    let fake = FakeProvider::start(vec![ok().after(Duration::from_secs(3)), ok()]).await;
    let retry = RetryPolicy {
        request_timeout: Duration::from_millis(200),
        ..policy()
    };
    let client = provider(
        LlmProviderKind::OpenAi,
        format!("{}/v1", fake.origin),
        Some(KEY),
        retry,
    );

    let response = client.complete(&request()).await.unwrap();

    assert_eq!((response.attempts, fake.calls()), (2, 2));
}
