//! A loopback HTTP server that plays a provider: it answers a scripted sequence of responses
//! (the last one repeats forever), or judges each request body the way a real server would;
//! it records every request and counts calls.

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use serde_json::Value;
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Option<Duration>,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
            delay: None,
        }
    }
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
    /// Simulates an upstream that answers too late.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// Answers a request body as a particular server would.
pub type Judge = fn(&Value) -> Reply;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    judge: Option<Judge>,
    requests: Mutex<Vec<Recorded>>,
}

pub struct FakeProvider {
    /// `http://127.0.0.1:{port}`.
    pub origin: String,
    shared: Arc<Shared>,
}

impl FakeProvider {
    pub async fn start(script: Vec<Reply>) -> Self {
        assert!(!script.is_empty(), "a fake needs at least one reply");
        Self::serve(Shared {
            script: Mutex::new(script.into()),
            ..Shared::default()
        })
        .await
    }

    /// A server that answers each request by what its body asks for.
    pub async fn judging(judge: Judge) -> Self {
        Self::serve(Shared {
            judge: Some(judge),
            ..Shared::default()
        })
        .await
    }

    async fn serve(shared: Shared) -> Self {
        let shared = Arc::new(shared);
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let origin = format!("http://{}", listener.local_addr().expect("bound address"));
        tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("fake provider serves")
        });
        Self { origin, shared }
    }

    pub fn calls(&self) -> usize {
        self.shared.requests.lock().expect("lock").len()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }

    pub fn request(&self, n: usize) -> Recorded {
        self.requests()[n].clone()
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().expect("lock").push(Recorded {
        path: uri.path().to_owned(),
        headers,
        body: body.clone(),
    });
    let reply = if let Some(judge) = shared.judge {
        judge(&body)
    } else {
        let mut script = shared.script.lock().expect("lock");
        if script.len() > 1 {
            script.pop_front().expect("a scripted reply")
        } else {
            script.front().cloned().expect("a scripted reply")
        }
    };
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    let mut response = (
        StatusCode::from_u16(reply.status).expect("a valid status"),
        reply.body,
    )
        .into_response();
    for (name, value) in reply.headers {
        response
            .headers_mut()
            .insert(name, value.parse().expect("a valid header value"));
    }
    response
}
