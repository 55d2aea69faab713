//! Free-surface throughput: sandbox calls and catalog GETs against a bare axum route, measured
//! in the same run on loopback with 64 connections.
//!
//! `cargo run --release -p grove-bench --bin free -- [seconds per scenario]`

use grove_bench::load::{self, Request};
use grove_common::config::Config;
use reqwest::Method;
use std::{collections::HashMap, time::Duration};

const CONNECTIONS: usize = 64;

async fn bare_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = axum::Router::new().route(
        "/",
        axum::routing::post(|| async { "ok" }).get(|| async { "ok" }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

async fn grove_server() -> String {
    let db = std::env::temp_dir().join(format!("grove-bench-free-{}.db", std::process::id()));
    let db_url = format!("sqlite://{}?mode=rwc", db.display());
    let env: HashMap<String, String> = [
        ("BIND_ADDR", "127.0.0.1:0"),
        ("ADMIN_ADDR", "127.0.0.1:0"),
        ("DATABASE_URL", db_url.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let app = grove::build(Config::from_map(&env).expect("config"))
        .await
        .expect("app");
    let url = format!("http://{}", app.local_addr());
    tokio::spawn(app.run_until(std::future::pending()));
    url
}

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (warmup, duration) = (Duration::from_secs(1), Duration::from_secs(secs));
    let bare = bare_server().await;
    let grove = grove_server().await;
    let body = serde_json::json!({
        "mode": "diagnose_growth",
        "messages": [{"role": "user", "content": "We are a 5-person bookkeeping firm with 30 leads a month and close 5. Where is the constraint?"}],
        "context": {"company": {"what_they_sell": "monthly bookkeeping", "stage": "early_revenue"}, "metrics": {"leads_per_month": 30, "close_rate_pct": 16.7}}
    })
    .to_string()
    .into_bytes();

    println!(
        "grove-bench: {CONNECTIONS} connections, {secs} s per scenario after {}s warm-up, loopback, load generator in-process",
        warmup.as_secs()
    );
    let b = bare.clone();
    let baseline = load::run(
        "bare axum POST / (baseline)",
        CONNECTIONS,
        warmup,
        duration,
        move |_| Request {
            method: Method::POST,
            url: format!("{b}/"),
            headers: vec![("content-type", "application/json".into())],
            body: Some(b"{}".to_vec()),
            expect_status: 200,
        },
    )
    .await;
    let g = grove.clone();
    let sandbox = load::run(
        "sandbox POST /agents/mary/call",
        CONNECTIONS,
        warmup,
        duration,
        move |_| Request::sandbox(format!("{g}/api/v1/agents/mary/call"), body.clone()),
    )
    .await;
    let g = grove.clone();
    let catalog = load::run(
        "catalog GET /api/v1/agents",
        CONNECTIONS,
        warmup,
        duration,
        move |_| Request {
            method: Method::GET,
            url: format!("{g}/api/v1/agents"),
            headers: vec![],
            body: None,
            expect_status: 200,
        },
    )
    .await;
    let g = grove.clone();
    let schema = load::run(
        "schema GET /schemas/draft_sop/resp",
        CONNECTIONS,
        warmup,
        duration,
        move |_| Request {
            method: Method::GET,
            url: format!("{g}/api/v1/schemas/draft_sop/response.json"),
            headers: vec![],
            body: None,
            expect_status: 200,
        },
    )
    .await;
    let reports = [baseline, sandbox, catalog, schema];
    load::print(&reports, &reports[0]);
    println!(
        "sandbox / bare throughput ratio: {:.2} (goal >= 0.50)",
        reports[1].rps() / reports[0].rps()
    );
}
