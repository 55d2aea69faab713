//! Both LLM clients against loopback servers that speak the providers' real wire formats:
//! answers, refusals, truncation, quota, retries with `retry-after`, Anthropic's fallback to
//! forced tool use, servers that answer like vLLM, Ollama and Azure OpenAI (structured-output
//! step-down, the max-tokens field, temperature), and the call deadline. Each fake asserts
//! exactly how often it was called.

#[path = "llm_providers/anthropic.rs"]
mod anthropic;
#[path = "llm_providers/compatible.rs"]
mod compatible;
#[path = "llm_providers/deadline.rs"]
mod deadline;
#[path = "llm_providers/fake.rs"]
mod fake;
#[path = "llm_providers/openai.rs"]
mod openai;

use grove_common::config::{LlmConfig, LlmProviderKind, Secret};
use grove_worker::llm::{self, ChatMessage, LlmProvider, LlmRequest, ProviderSchema, RetryPolicy};
use serde_json::{Value, json};
use std::{
    cell::RefCell,
    io::Write,
    sync::{Arc, Mutex, Once},
    time::Duration,
};

pub const KEY: &str = "sk-test-5d1c9e-never-in-logs";
/// Markers that must never reach a log line: the prompt and the caller's text are request content.
pub const SYSTEM_MARKER: &str = "SYSTEM-MARKER-7f3a";
pub const CONTENT_MARKER: &str = "CONTENT-MARKER-91bb";

/// Small delays keep the suite fast; `max_delay` leaves room for a one-second `retry-after`.
pub fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
    }
}

pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"reply": {"type": "string"}},
        "required": ["reply"],
        "additionalProperties": false
    })
}

pub fn request() -> LlmRequest {
    LlmRequest {
        system: format!("You are a growth coach. {SYSTEM_MARKER}").into(),
        messages: vec![ChatMessage::user(format!(
            "Churn is 7% a month. {CONTENT_MARKER}"
        ))],
        schema_name: "grove_diagnose_growth".into(),
        schema: std::sync::Arc::new(ProviderSchema::new(schema())),
        max_output_tokens: 800,
        deadline: None,
    }
}

pub fn provider(
    kind: LlmProviderKind,
    base_url: String,
    key: Option<&str>,
    retry: RetryPolicy,
) -> Arc<dyn LlmProvider> {
    configured(config(kind, base_url, key), retry)
}

/// The configuration `provider` uses, for tests that change a request-shaping setting.
pub fn config(kind: LlmProviderKind, base_url: String, key: Option<&str>) -> LlmConfig {
    let mut config = LlmConfig::new(kind, &base_url, key.map(Secret::new));
    config.model = "model-under-test".into();
    config
}

pub fn configured(config: LlmConfig, retry: RetryPolicy) -> Arc<dyn LlmProvider> {
    llm::from_config(&config, retry).expect("the client builds")
}

pub fn header(recorded: &fake::Recorded, name: &str) -> Option<String> {
    recorded
        .headers
        .get(name)
        .map(|v| v.to_str().expect("an ASCII header").to_owned())
}

/// Everything logged on this thread, at every level, while it lives. Tests run on tokio's
/// current-thread runtime, so the client's and the fake's tasks log on this thread too.
///
/// One global subscriber routes each thread's events to that thread's buffer. A per-test
/// `set_default` is not enough: tracing caches callsite interest globally, so a test running in
/// parallel without a subscriber can switch our events off.
pub struct Logs {
    buffer: Arc<Mutex<Vec<u8>>>,
}

thread_local! {
    static SINK: RefCell<Option<Arc<Mutex<Vec<u8>>>>> = const { RefCell::new(None) };
}

impl Logs {
    pub fn capture() -> Self {
        static INIT: Once = Once::new();
        INIT.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(|| ThreadSink)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        });
        let buffer = Arc::new(Mutex::new(Vec::new()));
        SINK.with(|sink| *sink.borrow_mut() = Some(buffer.clone()));
        Self { buffer }
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.buffer.lock().expect("lock").clone()).expect("UTF-8 logs")
    }

    /// The logs said something, and nothing secret or private.
    pub fn assert_clean(&self, expected: &str) {
        let text = self.text();
        assert!(
            text.contains(expected),
            "expected {expected:?} in logs:\n{text}"
        );
        for forbidden in [KEY, SYSTEM_MARKER, CONTENT_MARKER] {
            assert!(
                !text.contains(forbidden),
                "{forbidden} leaked into logs:\n{text}"
            );
        }
    }
}

impl Drop for Logs {
    fn drop(&mut self) {
        SINK.with(|sink| *sink.borrow_mut() = None);
    }
}

/// Appends to the current thread's buffer, if a test is capturing.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|sink| {
            if let Some(buffer) = sink.borrow().as_ref() {
                buffer.lock().expect("lock").extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
