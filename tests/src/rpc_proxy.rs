//! A JSON-RPC proxy in front of anvil that answers one method the way a troubled node or a hosted
//! provider does (a rate limit, a refusal, an answer lost after the node took the request), and
//! forwards everything else unchanged: the node errors of docs/settlement.md's table, on demand.

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};

/// What the proxy does with requests for the faulted method.
#[derive(Clone, Debug)]
pub enum Fault {
    /// HTTP 429 with no JSON-RPC body, as a provider's gateway answers a rate limit.
    Http(u16),
    /// A JSON-RPC error answer (the node refused the request).
    RpcError { code: i64, message: String },
    /// Forwarded to the node, whose answer is then replaced by a 502: the node took it, the
    /// caller cannot know.
    ForwardThen502,
}

struct Inner {
    upstream: String,
    client: reqwest::Client,
    fault: Mutex<Option<(String, Fault)>>,
    faulted: Mutex<u64>,
}

pub struct RpcProxy {
    inner: Arc<Inner>,
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl RpcProxy {
    pub async fn start(upstream: &str) -> Self {
        let inner = Arc::new(Inner {
            upstream: upstream.to_owned(),
            client: grove_common::http_client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            fault: Mutex::new(None),
            faulted: Mutex::new(0),
        });
        let app = Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&inner));
        let (url, stop) = crate::serve_loopback(app).await;
        Self {
            inner,
            url,
            _stop: stop,
        }
    }

    /// Faults every later request for `method` (`None`: forward everything).
    pub fn fault(&self, method: &str, fault: Option<Fault>) {
        *self
            .inner
            .fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = fault.map(|f| (method.to_owned(), f));
    }

    /// How many requests met the fault.
    pub fn faulted(&self) -> u64 {
        *self
            .inner
            .faulted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

async fn forward(State(p): State<Arc<Inner>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let fault = p
        .fault
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .filter(|(method, _)| request["method"] == method.as_str())
        .map(|(_, fault)| fault);
    if fault.is_some() {
        *p.faulted.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }
    let pass = || async {
        p.client
            .post(&p.upstream)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
    };
    match fault {
        None => match pass().await {
            Ok(r) => {
                let status = StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::OK);
                let bytes = r.bytes().await.unwrap_or_default();
                (status, [("content-type", "application/json")], bytes).into_response()
            }
            Err(_) => StatusCode::BAD_GATEWAY.into_response(),
        },
        Some(Fault::Http(status)) => StatusCode::from_u16(status)
            .unwrap_or(StatusCode::TOO_MANY_REQUESTS)
            .into_response(),
        Some(Fault::RpcError { code, message }) => axum::Json(json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": code, "message": message},
        }))
        .into_response(),
        Some(Fault::ForwardThen502) => {
            let _ = pass().await;
            StatusCode::BAD_GATEWAY.into_response()
        }
    }
}
