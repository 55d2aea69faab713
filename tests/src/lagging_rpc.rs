//! A JSON-RPC proxy in front of anvil that serves the chain as a hosted endpoint a few blocks
//! behind does (issue 25): its `latest`, `safe` and `finalized` are anvil's minus `lag` blocks,
//! `eth_blockNumber` answers the lagged head, and a transaction mined above it has no receipt
//! yet. Everything else is forwarded unchanged. The lag can be changed while the test runs.

use serde_json::{Value, json};
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

#[derive(Clone)]
struct Upstream {
    url: String,
    client: reqwest::Client,
    lag: Arc<AtomicU64>,
    /// Requests served, to tell that the app read through the proxy.
    served: Arc<AtomicU64>,
}

/// The proxy; stops when dropped.
pub struct LaggingRpc {
    pub url: String,
    lag: Arc<AtomicU64>,
    served: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl LaggingRpc {
    /// Serves `upstream` (anvil's URL) `lag` blocks behind.
    pub async fn start(upstream: &str, lag: u64) -> Self {
        let lag = Arc::new(AtomicU64::new(lag));
        let served = Arc::new(AtomicU64::new(0));
        let state = Upstream {
            url: upstream.to_owned(),
            client: grove_common::http_client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            lag: lag.clone(),
            served: served.clone(),
        };
        let app = axum::Router::new()
            .route("/", axum::routing::post(handle))
            .with_state(state);
        let (url, stop) = crate::serve_loopback(app).await;
        Self {
            url,
            lag,
            served,
            _stop: stop,
        }
    }

    /// Lags `blocks` behind from now on.
    pub fn set_lag(&self, blocks: u64) {
        self.lag.store(blocks, Ordering::SeqCst);
    }

    /// JSON-RPC requests answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

impl Upstream {
    async fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.forward(&body).await["result"].clone()
    }

    async fn forward(&self, body: &Value) -> Value {
        match self.client.post(&self.url).json(body).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(e) => {
                json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32000, "message": e.to_string()}})
            }
        }
    }

    /// The block number anvil gives `tag`, minus the lag.
    async fn lagged(&self, tag: &str, lag: u64) -> u64 {
        let block = self.call("eth_getBlockByNumber", json!([tag, false])).await;
        hex_u64(&block["number"]).saturating_sub(lag)
    }
}

async fn handle(
    axum::extract::State(up): axum::extract::State<Upstream>,
    axum::Json(mut body): axum::Json<Value>,
) -> axum::Json<Value> {
    up.served.fetch_add(1, Ordering::SeqCst);
    let lag = up.lag.load(Ordering::SeqCst);
    if lag == 0 {
        return axum::Json(up.forward(&body).await);
    }
    let head = up.lagged("latest", lag).await;
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": body["id"], "result": result});
    match method.as_str() {
        "eth_blockNumber" => return axum::Json(reply(json!(format!("{head:#x}")))),
        "eth_getTransactionReceipt" | "eth_getTransactionByHash" => {
            let mut answer = up.forward(&body).await;
            let mined_at = &answer["result"]["blockNumber"];
            if !mined_at.is_null() && hex_u64(mined_at) > head {
                answer["result"] = Value::Null;
            }
            return axum::Json(answer);
        }
        _ => {}
    }
    // Tags become the lagged numbers, wherever they appear (block arguments, log filters).
    let mut tags = vec![("latest", head), ("pending", head)];
    for tag in ["safe", "finalized"] {
        tags.push((tag, up.lagged(tag, lag).await));
    }
    rewrite(&mut body["params"], &tags, head);
    axum::Json(up.forward(&body).await)
}

/// Replaces block tags by numbers, and caps block numbers at the lagged head.
fn rewrite(v: &mut Value, tags: &[(&str, u64)], head: u64) {
    match v {
        Value::String(s) => {
            if let Some((_, n)) = tags.iter().find(|(t, _)| t == s) {
                *s = format!("{n:#x}");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rewrite(i, tags, head)),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                if (k == "toBlock" || k == "fromBlock")
                    && item.as_str().is_some_and(|s| s.starts_with("0x"))
                    && hex_u64(item) > head
                {
                    *item = json!(format!("{head:#x}"));
                } else {
                    rewrite(item, tags, head);
                }
            }
        }
        _ => {}
    }
}

fn hex_u64(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0)
}
