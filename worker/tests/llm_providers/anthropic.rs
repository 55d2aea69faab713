//! Anthropic Messages against a fake that speaks its wire format.

use super::fake::{FakeProvider, Reply};
use super::*;
use grove_worker::llm::{LlmError, Usage};
use std::time::Instant;

fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "model-under-test",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {
            "input_tokens": 200, "output_tokens": 60,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10
        }
    })
}

fn text(text: &str, stop: &str) -> Reply {
    Reply::json(200, message(json!([{"type": "text", "text": text}]), stop))
}

fn ok() -> Reply {
    text(r#"{"reply":"Fix onboarding first."}"#, "end_turn")
}

fn tool_answer() -> Reply {
    let block = json!([{
        "type": "tool_use", "id": "toolu_1", "name": "grove_diagnose_growth",
        "input": {"reply": "Fix onboarding first."}
    }]);
    Reply::json(200, message(block, "tool_use"))
}

fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}),
    )
}

/// Cached prompt tokens count as input.
const USAGE: Usage = Usage {
    input_tokens: 210,
    output_tokens: 60,
};

async fn start(script: Vec<Reply>) -> (FakeProvider, Arc<dyn LlmProvider>) {
    let fake = FakeProvider::start(script).await;
    let client = provider(
        LlmProviderKind::Anthropic,
        fake.origin.clone(),
        Some(KEY),
        policy(),
    );
    (fake, client)
}

#[tokio::test]
async fn anthropic_valid_answer_is_parsed_with_usage_from_an_output_config_request() {
    let logs = Logs::capture();
    let (fake, client) = start(vec![ok()]).await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!(response.json, json!({"reply": "Fix onboarding first."}));
    assert_eq!(
        (response.usage, response.attempts, fake.calls()),
        (USAGE, 1, 1)
    );
    let sent = fake.request(0);
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(header(&sent, "x-api-key").unwrap(), KEY);
    assert_eq!(header(&sent, "anthropic-version").unwrap(), "2023-06-01");
    assert_eq!(header(&sent, "content-type").unwrap(), "application/json");
    assert_eq!(header(&sent, "authorization"), None);
    let body = &sent.body;
    assert_eq!(body["model"], "model-under-test");
    assert!(body["system"].as_str().unwrap().contains(SYSTEM_MARKER));
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["max_tokens"], 800);
    assert_eq!(body["output_config"]["format"]["type"], "json_schema");
    assert_eq!(body["output_config"]["format"]["schema"], schema());
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    logs.assert_clean("llm call completed");
}

#[tokio::test]
async fn anthropic_rate_limit_waits_for_retry_after_then_succeeds() {
    let logs = Logs::capture();
    let limited = error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit",
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
async fn anthropic_server_error_and_overload_are_retried_then_succeed() {
    let (fake, client) = start(vec![
        error(500, "api_error", "Internal server error"),
        error(529, "overloaded_error", "Overloaded"),
        ok(),
    ])
    .await;

    let response = client.complete(&request()).await.unwrap();

    assert_eq!((response.attempts, fake.calls()), (3, 3));
}

#[tokio::test]
async fn anthropic_persistent_server_error_is_upstream_after_max_attempts() {
    let (fake, client) = start(vec![error(500, "api_error", "Internal server error")]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(
            err,
            LlmError::Upstream {
                status: Some(500),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 3);
}

#[tokio::test]
async fn anthropic_low_credit_is_quota_after_one_call() {
    let broke = error(
        400,
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing.",
    );
    let (fake, client) = start(vec![broke, ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(err, LlmError::Quota { .. }), "{err:?}");
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn anthropic_refusal_is_final_after_one_call_and_keeps_its_usage() {
    let (fake, client) = start(vec![text("I can't help with that.", "refusal"), ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(matches!(&err, LlmError::Refusal { message, .. } if message.contains("can't help")));
    assert_eq!((err.usage(), fake.calls()), (USAGE, 1));
}

#[tokio::test]
async fn anthropic_max_tokens_and_full_context_are_truncated_after_one_call() {
    for stop in ["max_tokens", "model_context_window_exceeded"] {
        let (fake, client) = start(vec![text(r#"{"reply":"Fix onboa"#, stop), ok()]).await;

        let err = client.complete(&request()).await.unwrap_err();

        assert!(
            matches!(err, LlmError::Truncated { usage } if usage == USAGE),
            "{stop}: {err:?}"
        );
        assert_eq!(fake.calls(), 1, "{stop}");
    }
}

#[tokio::test]
async fn anthropic_non_json_text_is_invalid_output() {
    let (fake, client) = start(vec![text("Sure! First, fix onboarding.", "end_turn"), ok()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(err, LlmError::InvalidOutput { usage, .. } if usage == USAGE),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn anthropic_unsupported_output_config_falls_back_to_forced_tool_use_and_remembers() {
    let unsupported = error(
        400,
        "invalid_request_error",
        "output_config: Extra inputs are not permitted",
    );
    let (fake, client) = start(vec![unsupported, tool_answer()]).await;

    let first = client.complete(&request()).await.unwrap();

    assert_eq!(first.json, json!({"reply": "Fix onboarding first."}));
    assert_eq!((first.attempts, first.usage, fake.calls()), (2, USAGE, 2));
    let fallback = fake.request(1).body;
    assert_eq!(
        fallback["tool_choice"],
        json!({"type": "tool", "name": "grove_diagnose_growth"})
    );
    assert_eq!(fallback["tools"][0]["name"], "grove_diagnose_growth");
    assert_eq!(fallback["tools"][0]["input_schema"], schema());
    assert!(fallback.get("output_config").is_none());

    // The next call goes straight to tool use: no second probe.
    let second = client.complete(&request()).await.unwrap();

    assert_eq!((second.attempts, fake.calls()), (1, 3));
    let next = fake.request(2).body;
    assert!(next.get("tool_choice").is_some() && next.get("output_config").is_none());
}

#[tokio::test]
async fn anthropic_schema_error_is_a_bad_request_not_a_fallback() {
    let bad_schema = error(
        400,
        "invalid_request_error",
        "output_config.format.schema: For 'string' type, property 'maxLength' is not supported",
    );
    let (fake, client) = start(vec![bad_schema, tool_answer()]).await;

    let err = client.complete(&request()).await.unwrap_err();

    assert!(
        matches!(err, LlmError::BadRequest { status: 400, .. }),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 1);
}
