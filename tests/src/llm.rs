//! A loopback model server speaking the real wire formats: OpenAI Chat Completions
//! (`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`).
//!
//! Each request takes the next scripted reply (or `Reply::Valid` when the script is empty).
//! A valid answer is the model part of the mode's sandbox sample, which traces its numbers to
//! the caller in `callers.json` (`caller_body`).
//!
//! The worker's health probes (`grove_worker::llm::probe::PROBE_PROMPT`) are answered apart:
//! counted in `probes`, never in `received`, and they take nothing from the script. The model can
//! go down (`go_down`: its port refuses connections) or fail every request with a 5xx
//! (`fail_all`), probes included, and come back.
//!
//! It speaks HTTP/1.1 and h2c (HTTP/2 by prior knowledge) on one port, with no limit of its own
//! on streams in flight, and counts the connections it accepted and the HTTP version of every
//! request (`connections`, `requests_over`).

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{StatusCode, Version},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::post,
};
use grove_common::{catalog, sandbox};
use serde_json::{Value, json};
use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

const CALLERS: &str = include_str!("../../worker/src/envelope/tests/callers.json");

/// A request body whose figures the mode's sample answer traces to.
pub fn caller_body(mode: &str) -> Value {
    let callers: Value = serde_json::from_str(CALLERS).expect("callers.json");
    let c = &callers[mode];
    json!({"mode": mode, "messages": [{"role": "user", "content": c["message"]}], "context": c["context"]})
}

/// The part of the sample envelope a model produces.
pub fn model_answer(mode: &str) -> Value {
    let m = catalog::mode(mode.parse().expect("mode"));
    let coach = catalog::coaches_offering(m.id).next().expect("coach");
    let mut v = sandbox::coaching_sample(coach, m).expect("sample");
    let obj = v.as_object_mut().expect("object");
    for k in ["agent", "mode", "usage", "receipt", "sandbox"] {
        obj.remove(k);
    }
    obj.insert("context_gaps".into(), json!([]));
    v
}

#[derive(Clone, Debug)]
pub enum Reply {
    Valid,
    /// A valid answer after a delay (a slow model).
    Slow(Duration),
    /// A valid answer once the test calls [`FakeLlm::release`] (a model whose answer the test
    /// times by a condition, not a clock).
    Held,
    /// This JSON as the answer (to script invalid answers).
    Answer(Value),
    NotJson,
    Truncated,
    Refusal,
    RateLimited {
        retry_after_s: u64,
    },
    ServerError,
    /// 400 as OpenAI answers a model without structured outputs: `json_schema` not supported.
    StructuredUnsupported,
}

#[derive(Default)]
struct Inner {
    script: Mutex<VecDeque<Reply>>,
    received: AtomicUsize,
    probes: AtomicUsize,
    failing: std::sync::atomic::AtomicBool,
    completed: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    released: tokio::sync::watch::Sender<bool>,
    /// Requests by HTTP version, probes included.
    versions: Mutex<HashMap<Version, usize>>,
}

#[derive(Clone)]
pub struct FakeLlm {
    inner: Arc<Inner>,
    base: String,
    server: Arc<crate::Switchable>,
}

/// Marks the worker's health probe (`grove_worker::llm::probe::PROBE_PROMPT`).
const PROBE_MARK: &str = "Grove health probe";

const USAGE_IN: u64 = 120;
const USAGE_OUT: u64 = 80;

impl FakeLlm {
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let router = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&inner),
                count_version,
            ))
            .with_state(Arc::clone(&inner));
        let server = crate::Switchable::serve(router).await;
        Self {
            inner,
            base: server.url(),
            server: Arc::new(server),
        }
    }

    /// The model's address refuses connections (the provider is down) until `come_back`.
    pub async fn go_down(&self) {
        self.server.down().await;
    }

    pub async fn come_back(&self) {
        self.server.up().await;
    }

    /// Every request, probes included, answers a server error (500 from the OpenAI format, 529
    /// from Anthropic's) while `failing`.
    pub fn fail_all(&self, failing: bool) {
        self.inner.failing.store(failing, Ordering::SeqCst);
    }

    /// Health probes received.
    pub fn probes(&self) -> usize {
        self.inner.probes.load(Ordering::SeqCst)
    }

    /// Base URL for `LLM_BASE_URL` (OpenAI-compatible servers include `/v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.base)
    }

    pub fn anthropic_base(&self) -> String {
        self.base.clone()
    }

    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        if let Ok(mut s) = self.inner.script.lock() {
            s.extend(replies);
        }
    }

    /// Requests received (a retried HTTP attempt counts again).
    pub fn received(&self) -> usize {
        self.inner.received.load(Ordering::SeqCst)
    }

    /// Answers actually delivered: a request whose client went away mid-answer is not billed.
    pub fn completed(&self) -> usize {
        self.inner.completed.load(Ordering::SeqCst)
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.inner
            .bodies
            .lock()
            .map(|b| b.clone())
            .unwrap_or_default()
    }

    /// Lets every `Reply::Held` answer, now and later.
    pub fn release(&self) {
        self.inner.released.send_replace(true);
    }

    pub fn usage_per_call() -> (u64, u64) {
        (USAGE_IN, USAGE_OUT)
    }

    /// TCP connections accepted since it started.
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// Requests that arrived over this HTTP version (health probes and retries included).
    pub fn requests_over(&self, version: Version) -> usize {
        self.inner
            .versions
            .lock()
            .map(|v| v.get(&version).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

async fn count_version(State(inner): State<Arc<Inner>>, request: Request, next: Next) -> Response {
    if let Ok(mut v) = inner.versions.lock() {
        *v.entry(request.version()).or_default() += 1;
    }
    next.run(request).await
}

/// A health probe: answered apart from the script, unless the model is failing.
fn probe(inner: &Inner, body: &Value) -> Option<Reply> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let is_probe = matches!(messages, [only] if only["content"].as_str().is_some_and(|c| c.contains(PROBE_MARK)));
    if !is_probe {
        return None;
    }
    inner.probes.fetch_add(1, Ordering::SeqCst);
    Some(if inner.failing.load(Ordering::SeqCst) {
        Reply::ServerError
    } else {
        Reply::Answer(json!("OK"))
    })
}

/// The reply to a request, and whether it is a health probe.
fn next(inner: &Inner, body: &Value) -> (Reply, bool) {
    if let Some(reply) = probe(inner, body) {
        return (reply, true);
    }
    (scripted(inner, body), false)
}

fn scripted(inner: &Inner, body: &Value) -> Reply {
    if inner.failing.load(Ordering::SeqCst) {
        inner.received.fetch_add(1, Ordering::SeqCst);
        return Reply::ServerError;
    }
    inner.received.fetch_add(1, Ordering::SeqCst);
    if let Ok(mut b) = inner.bodies.lock() {
        b.push(body.clone());
    }
    inner
        .script
        .lock()
        .ok()
        .and_then(|mut s| s.pop_front())
        .unwrap_or(Reply::Valid)
}

fn mode_from_text(text: &str) -> Option<&'static str> {
    let mut found: Vec<&'static str> = catalog::MODES
        .iter()
        .map(|m| m.id.as_str())
        .filter(|id| text.contains(id))
        .collect();
    found.sort_by_key(|id| std::cmp::Reverse(id.len()));
    found.first().copied()
}

/// Resolves the scripted reply into (answer JSON or special, delay).
async fn resolve(inner: &Inner, reply: Reply, mode: Option<&str>) -> Result<Value, Reply> {
    let valid = || mode.map(model_answer).unwrap_or_else(|| json!({}));
    match reply {
        Reply::Valid => Ok(valid()),
        Reply::Slow(d) => {
            tokio::time::sleep(d).await;
            Ok(valid())
        }
        Reply::Held => {
            let mut released = inner.released.subscribe();
            let _ = released.wait_for(|r| *r).await;
            Ok(valid())
        }
        Reply::Answer(v) => Ok(v),
        other => {
            let _ = inner;
            Err(other)
        }
    }
}

async fn openai(State(inner): State<Arc<Inner>>, Json(body): Json<Value>) -> Response {
    let (reply, probing) = next(&inner, &body);
    let mode = body["response_format"]["json_schema"]["name"]
        .as_str()
        .and_then(|n| n.strip_prefix("grove_"))
        .map(str::to_owned);
    let usage = json!({"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT});
    let message = |content: Value, finish: &str| {
        json!({"id": "chatcmpl-test", "object": "chat.completion", "model": body["model"],
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null}, "finish_reason": finish}],
               "usage": usage})
    };
    let response = match resolve(&inner, reply, mode.as_deref()).await {
        Ok(answer) => Json(message(json!(answer.to_string()), "stop")).into_response(),
        Err(Reply::NotJson) => Json(message(json!("Sure! Here is my advice: focus on sales."), "stop")).into_response(),
        Err(Reply::Truncated) => Json(message(json!("{\"reply\": \"Your constraint is"), "length")).into_response(),
        Err(Reply::Refusal) => {
            let mut m = message(Value::Null, "stop");
            m["choices"][0]["message"]["refusal"] = json!("I can't help with that.");
            Json(m).into_response()
        }
        Err(Reply::RateLimited { retry_after_s }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry_after_s.to_string())],
            Json(json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}})),
        )
            .into_response(),
        Err(Reply::StructuredUnsupported) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", "type": "invalid_request_error", "param": "response_format", "code": null}})),
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": {"message": "The server had an error", "type": "server_error", "code": null}}))).into_response(),
    };
    if !probing {
        inner.completed.fetch_add(1, Ordering::SeqCst);
    }
    response
}

async fn anthropic(State(inner): State<Arc<Inner>>, Json(body): Json<Value>) -> Response {
    let (reply, probing) = next(&inner, &body);
    let mode = mode_from_text(&body["system"].to_string());
    let usage = json!({"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT});
    let message = |text: String, stop: &str| {
        json!({"id": "msg_test", "type": "message", "role": "assistant", "model": body["model"],
               "content": [{"type": "text", "text": text}], "stop_reason": stop, "stop_sequence": null, "usage": usage})
    };
    let response = match resolve(&inner, reply, mode).await {
        Ok(answer) => Json(message(answer.to_string(), "end_turn")).into_response(),
        Err(Reply::NotJson) => Json(message("Here is my advice.".into(), "end_turn")).into_response(),
        Err(Reply::Truncated) => Json(message("{\"reply\": \"Your".into(), "max_tokens")).into_response(),
        Err(Reply::Refusal) => Json(message(String::new(), "refusal")).into_response(),
        Err(Reply::RateLimited { retry_after_s }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry_after_s.to_string())],
            Json(json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}})),
        )
            .into_response(),
        Err(_) => (StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE), Json(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))).into_response(),
    };
    if !probing {
        inner.completed.fetch_add(1, Ordering::SeqCst);
    }
    response
}
