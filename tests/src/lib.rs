//! Test harness: starts the real API on 127.0.0.1:0 with a configuration built from a map
//! (no process-environment races), and gives tests a client and helpers.

pub mod api_process;
pub mod browser;
pub mod cdp;
pub mod chain;
pub mod db;
pub mod facilitator;
pub mod lagging_rpc;
pub mod ledger_rows;
pub mod llm;
pub mod loopback;
pub mod mcp;
pub mod otlp;
pub mod paid;
pub mod pg_proxy;
pub mod private_pg;
pub mod queue_rig;
pub mod review;
pub mod rpc_proxy;
pub mod smart_wallet;
pub mod twilio;
pub mod x402;

pub use db::TestDb;
pub use loopback::Switchable;

use grove::Application;
use grove_common::config::Config;
use serde_json::Value;
use std::collections::HashMap;
use tokio::sync::oneshot;

/// A test wallet that receives payments (any valid address works).
pub const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
pub const BASE_URL: &str = "https://grove.test";

/// The operators the test apps know: alice (`ADMIN_TOKEN`) and bob.
pub const ADMIN_TOKENS: &str = "alice:alice-test-token-0123456789,bob:bob-test-token-0123456789";
/// alice's bearer token.
pub const ADMIN_TOKEN: &str = "alice-test-token-0123456789";

pub struct TestApp {
    pub addr: String,
    /// The admin listener's base URL (`ADMIN_ADDR`), when it is on.
    pub admin: Option<String>,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    db: Option<TestDb>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The configuration most tests want: payments on (locally verified), a model configured.
pub fn default_env() -> HashMap<String, String> {
    [
        ("BIND_ADDR", "127.0.0.1:0"),
        // Tests run side by side: each admin listener on a port of its own.
        ("ADMIN_ADDR", "127.0.0.1:0"),
        ("ADMIN_TOKENS", ADMIN_TOKENS),
        ("PUBLIC_BASE_URL", BASE_URL),
        ("X402_PAY_TO", PAY_TO),
        ("LLM_PROVIDER", "openai"),
        ("LLM_BASE_URL", "http://127.0.0.1:9/v1"),
        // The test chain mines a block only when a transaction arrives, so no block would ever
        // come on top of a settlement's: its own block is enough here (tests of a deeper
        // `SETTLEMENT_CONFIRMATIONS` mine blocks on an interval).
        ("SETTLEMENT_CONFIRMATIONS", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(&[], &[]).await
}

/// Starts an app with `set` added to (and `unset` removed from) the default environment.
pub async fn spawn_app_with(set: &[(&str, &str)], unset: &[&str]) -> TestApp {
    let mut env = default_env();
    for (k, v) in set {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    for k in unset {
        env.remove(*k);
    }
    // Free-surface tests get their own SQLite file too: the app always opens its database.
    let db = TestDb::new().await;
    env.insert("DATABASE_URL".into(), db.url.clone());
    let config = Config::from_map(&env).expect("test configuration is valid");
    let mut app = start(config).await;
    app.db = Some(db);
    app
}

/// Starts an app from a finished configuration.
pub async fn start(config: Config) -> TestApp {
    let app = grove::build(config).await.expect("app starts");
    TestApp::serve(app)
}

/// Starts an app that reads time from `clock`.
pub async fn start_with_clock(
    config: Config,
    clock: std::sync::Arc<dyn grove_common::clock::Clock>,
) -> TestApp {
    let app = grove::build_with_clock(config, clock)
        .await
        .expect("app starts");
    TestApp::serve(app)
}

impl TestApp {
    /// Serves a built application until the handle is dropped.
    pub fn serve(app: Application) -> Self {
        let addr = format!("http://{}", app.local_addr());
        let admin = app.admin_addr().map(|a| format!("http://{a}"));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        let client = grove_common::http_client::builder()
            .no_proxy()
            .build()
            .expect("client");
        TestApp {
            addr,
            admin,
            client,
            stop: Some(stop),
            db: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.addr, path)
    }

    /// Stops the server, as a process would on SIGTERM, and waits until its port refuses
    /// connections (what runs beside it stops with it).
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let health = self.url("/healthz");
        wait_until("the stopped app to close its port", async || {
            self.client.get(&health).send().await.is_err()
        })
        .await;
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("GET reaches the server")
    }

    /// A URL on the admin listener.
    pub fn admin_url(&self, path: &str) -> String {
        let base = self.admin.as_deref().expect("the admin listener is on");
        format!("{base}{path}")
    }

    /// GET on the admin listener, without a token (the metrics need none).
    pub async fn admin_get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.admin_url(path))
            .send()
            .await
            .expect("GET reaches the admin listener")
    }

    /// A request on the admin listener as alice (`ADMIN_TOKEN`): GET, or POST with `body` as
    /// JSON. Its status and JSON answer.
    pub async fn admin(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let url = self.admin_url(path);
        let req = match method {
            "GET" => self.client.get(url),
            _ => self
                .client
                .post(url)
                .header("content-type", "application/json")
                .body(body.unwrap_or(serde_json::Value::Null).to_string()),
        };
        let r = req.bearer_auth(ADMIN_TOKEN).send().await.expect("reaches");
        let status = r.status().as_u16();
        (status, r.json().await.expect("JSON answer"))
    }

    /// The admin listener's `/metrics` text.
    pub async fn metrics(&self) -> String {
        let r = self.admin_get("/metrics").await;
        assert_eq!(r.status(), 200, "GET /metrics on the admin listener");
        r.text().await.expect("metrics text")
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().await.expect("JSON body")
    }

    /// POSTs a JSON body with extra headers.
    pub async fn post_json(
        &self,
        path: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("POST reaches the server")
    }

    pub async fn post_raw(
        &self,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> reqwest::Response {
        let mut req = self.client.post(self.url(path)).body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        req.send().await.expect("POST reaches the server")
    }
}

/// A valid coaching body for `mode`.
pub fn coaching_body(mode: &str) -> Value {
    serde_json::json!({
        "mode": mode,
        "messages": [{"role": "user", "content": "We are a 5-person bookkeeping firm with 30 leads a month. What should we fix first?"}],
        "context": {"company": {"what_they_sell": "monthly bookkeeping", "stage": "early_revenue"}, "metrics": {"leads_per_month": 30}},
    })
}

/// A valid review-request body.
pub fn action_body() -> Value {
    serde_json::json!({
        "business": {"name": "Harbor Physio", "review_url": "https://example.com/review", "timezone": "America/New_York"},
        "customer": {"phone": "+13055550142", "first_name": "Dana"},
        "consent": {"method": "web_form_checkbox", "captured_at": "2026-10-02T15:04:05-04:00", "source": "intake form checkbox"},
    })
}

/// Sets the value at a JSON pointer, creating objects on the way.
pub fn set_pointer(doc: &mut Value, pointer: &str, value: Value) {
    let mut cur = doc;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        if let Ok(idx) = part.parse::<usize>()
            && cur.is_array()
        {
            let arr = cur.as_array_mut().expect("array");
            while arr.len() <= idx {
                arr.push(Value::Object(Default::default()));
            }
            if last {
                arr[idx] = value;
                return;
            }
            cur = &mut arr[idx];
            continue;
        }
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let obj = cur.as_object_mut().expect("object");
        if last {
            obj.insert((*part).to_owned(), value);
            return;
        }
        cur = obj
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// Removes the value at a JSON pointer.
pub fn remove_pointer(doc: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let target = if parent.is_empty() {
        Some(doc)
    } else {
        doc.pointer_mut(parent)
    };
    if let Some(t) = target {
        if let Some(obj) = t.as_object_mut() {
            obj.remove(key);
        } else if let (Some(arr), Ok(i)) = (t.as_array_mut(), key.parse::<usize>()) {
            arr.remove(i);
        }
    }
}

/// The error body's detail paths.
pub fn detail_paths(body: &Value) -> Vec<String> {
    body["error"]["details"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|x| x["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Compiles a published schema the way a client would.
pub fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("published schema compiles")
}

/// Polls `cond` until it holds. The 20 s bound turns a hang into a failure; it is not a timing
/// assertion.
pub async fn wait_until(what: &str, cond: impl AsyncFnMut() -> bool) {
    wait_until_within(what, 20, cond).await;
}

/// `wait_until` with another bound, for conditions that follow the chain's own time (a block
/// past an authorization's `validBefore`).
pub async fn wait_until_within(what: &str, secs: u64, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A workspace binary next to the running test binary (scripts/test builds them first).
pub fn binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` (scripts/test does)",
        bin.display()
    );
    bin
}

/// A loopback port free right now (for a process that must bind it itself).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Serves a fake provider on a loopback port (HTTP/1.1 and h2c): its base URL, and the sender
/// that stops it.
pub async fn serve_loopback(app: axum::Router) -> (String, oneshot::Sender<()>) {
    let (url, stop, _) = loopback::serve_on_port_0(app).await;
    (url, stop)
}

/// The receipt URL of a paid call that answered 504 (its outcome not known in time: `why`).
pub async fn receipt_of_504(r: reqwest::Response, why: &str) -> String {
    assert_eq!(r.status(), 504, "{why}");
    let answer: serde_json::Value = r.json().await.expect("json");
    answer["error"]["receipt"]["url"]
        .as_str()
        .expect("a receipt")
        .to_owned()
}
