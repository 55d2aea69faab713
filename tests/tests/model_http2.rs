//! The model client's HTTP version (`LLM_HTTP2`, issue 31). By prior knowledge the calls one
//! process has in flight reach an h2c model server as streams of one connection; unset, each call
//! in flight holds an HTTP/1.1 connection of its own (a socket, and a file descriptor, per
//! waiting call on both sides). Both deliver every answer.

use grove_common::config::{Http2, LlmConfig, LlmProviderKind};
use grove_tests::{
    llm::{FakeLlm, Reply, caller_body},
    wait_until,
};
use grove_worker::llm::{self, ChatMessage, LlmProvider, LlmRequest, ProviderSchema, RetryPolicy};
use reqwest::Version;
use std::sync::Arc;

const CALLS: usize = 40;

/// `CALLS` model calls held at the fake until all have arrived, then answered: the fake.
async fn calls_in_flight(http2: Http2) -> FakeLlm {
    let fake = FakeLlm::start().await;
    let mut config = LlmConfig::new(LlmProviderKind::OpenAi, &fake.openai_base(), None);
    config.http2 = http2;
    let provider = llm::from_config(&config, RetryPolicy::LLM).expect("client");
    fake.script(std::iter::repeat_n(Reply::Held, CALLS));
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let provider: Arc<dyn LlmProvider> = Arc::clone(&provider);
            tokio::spawn(async move { provider.complete(&request()).await })
        })
        .collect();
    wait_until("every call is at the model at once", async || {
        fake.received() == CALLS
    })
    .await;
    fake.release();
    for call in calls {
        let answer = call.await.expect("the call's task").expect("an answer");
        assert_eq!(answer.attempts, 1);
    }
    assert_eq!(fake.completed(), CALLS);
    fake
}

fn request() -> LlmRequest {
    let body = caller_body("diagnose_growth");
    LlmRequest {
        system: "You are a growth coach.".into(),
        messages: vec![ChatMessage::user(
            body["messages"][0]["content"].to_string(),
        )],
        schema_name: "grove_diagnose_growth".into(),
        schema: Arc::new(ProviderSchema::new(serde_json::json!({"type": "object"}))),
        max_output_tokens: 800,
        deadline: None,
    }
}

#[tokio::test]
async fn with_prior_knowledge_calls_in_flight_share_one_http2_connection() {
    let fake = calls_in_flight(Http2::PriorKnowledge).await;

    assert_eq!(fake.requests_over(Version::HTTP_2), CALLS);
    assert_eq!(fake.requests_over(Version::HTTP_11), 0);
    assert!(
        fake.connections() <= 2,
        "{CALLS} calls over {} connections",
        fake.connections()
    );
}

#[tokio::test]
async fn by_default_each_call_in_flight_holds_an_http1_connection() {
    let fake = calls_in_flight(Http2::Auto).await;

    assert_eq!(fake.requests_over(Version::HTTP_11), CALLS);
    assert_eq!(fake.requests_over(Version::HTTP_2), 0);
    assert_eq!(fake.connections(), CALLS);
}
