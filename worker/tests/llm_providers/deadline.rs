//! The call's deadline bounds a provider call, retries included: what is cut short is
//! `LlmError::Deadline` (billing unknown), not a server that kept failing.

use super::fake::{FakeProvider, Reply};
use super::*;
use grove_worker::llm::LlmError;
use std::time::Instant;

fn overloaded() -> Reply {
    Reply::json(
        503,
        json!({"error": {"message": "Slow Down", "type": "server_error", "param": null, "code": null}}),
    )
    .header("retry-after", "0.3")
}

fn patient() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 10,
        ..policy()
    }
}

fn by(after: Duration) -> LlmRequest {
    LlmRequest {
        deadline: Some(tokio::time::Instant::now() + after),
        ..request()
    }
}

async fn openai(script: Vec<Reply>) -> (FakeProvider, Arc<dyn LlmProvider>) {
    let fake = FakeProvider::start(script).await;
    let client = provider(
        LlmProviderKind::OpenAi,
        format!("{}/v1", fake.origin),
        Some(KEY),
        patient(),
    );
    (fake, client)
}

#[tokio::test]
async fn retries_stop_before_the_deadline_instead_of_using_every_attempt() {
    let (fake, client) = openai(vec![overloaded()]).await;
    let started = Instant::now();

    let err = client
        .complete(&by(Duration::from_millis(700)))
        .await
        .unwrap_err();

    assert!(matches!(err, LlmError::Deadline { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert!(
        fake.calls() <= 3,
        "{} calls; the policy alone allows 10",
        fake.calls()
    );
}

#[tokio::test]
async fn a_slow_answer_is_cut_at_the_deadline() {
    let slow = Reply::json(200, json!({})).after(Duration::from_secs(3));
    let fake = FakeProvider::start(vec![slow]).await;
    let client = provider(
        LlmProviderKind::Anthropic,
        fake.origin.clone(),
        Some(KEY),
        patient(),
    );
    let started = Instant::now();

    let err = client
        .complete(&by(Duration::from_millis(400)))
        .await
        .unwrap_err();

    assert!(matches!(err, LlmError::Deadline { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn no_time_left_sends_nothing() {
    let (fake, client) = openai(vec![overloaded()]).await;

    let err = client.complete(&by(Duration::ZERO)).await.unwrap_err();

    assert!(matches!(err, LlmError::Deadline { .. }), "{err:?}");
    assert_eq!(fake.calls(), 0);
}
