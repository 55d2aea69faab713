//! Where the memory of a call in flight goes: the embedded api in this process under dhat's heap
//! profiler, `N` paid coaching calls held at the model at once (the loopback model answers none
//! until all are waiting), then released. dhat writes `dhat-heap.json` while every call is in
//! flight; its "t-end" is the heap at that moment, by allocation site
//! (`scripts/dhat-top dhat-heap.json` sums it by the frames that matter).
//!
//! `cargo run --release -p grove-bench --features dhat-heap --bin heap -- [N]`
//!
//! The load generator, the fake model and the fake facilitator run in this process too: their
//! allocations are in the profile under their own frames (`grove_tests`, `grove_bench`), to be
//! set aside when reading it.

use grove_bench::paid;
use grove_common::config::Config;
use grove_tests::{
    PAY_TO, TestDb, default_env,
    facilitator::FakeFacilitator,
    free_port,
    llm::{FakeLlm, Reply},
};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let facilitator = FakeFacilitator::start().await;
    let llm = FakeLlm::start().await;
    let db = TestDb::on("sqlite").await;
    let port = free_port();
    let mut env = default_env();
    for (k, v) in [
        ("BIND_ADDR", format!("127.0.0.1:{port}")),
        ("DATABASE_URL", db.url.clone()),
        ("X402_PAY_TO", PAY_TO.into()),
        ("X402_FACILITATOR_URL", facilitator.url().into()),
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("LLM_API_KEY", "test".into()),
        ("WORKER_CONCURRENCY", n.max(1).to_string()),
        ("CALL_DEADLINE_S", "120".into()),
    ] {
        env.insert(k.into(), v);
    }
    let app = grove::build(Config::from_map(&env).expect("configuration"))
        .await
        .expect("app starts");
    let base = format!("http://{}", app.local_addr());
    tokio::spawn(app.run_until(std::future::pending()));

    let challenge = paid::challenge(&base).await;
    let prepared = paid::bodies_and_payments(&challenge, 0, n);
    llm.script(std::iter::repeat_n(Reply::Held, n));
    let profiler = dhat::Profiler::builder().trim_backtraces(None).build();
    let started = Instant::now();
    let client = grove_common::http_client::builder()
        .no_proxy()
        .pool_max_idle_per_host(n)
        .build()
        .expect("client");
    let calls: Vec<_> = prepared
        .into_iter()
        .map(|(body, payment)| {
            let client = client.clone();
            let url = format!("{base}{}", paid::PATH);
            tokio::spawn(async move {
                client
                    .post(url)
                    .header("content-type", "application/json")
                    .header("payment-signature", payment)
                    .body(body)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
            })
        })
        .collect();
    while llm.received() < n {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "{n} calls waiting at the model after {:?}",
        started.elapsed()
    );
    // A settled moment with every call in flight: the heap's peak is here.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stats = dhat::HeapStats::get();
    println!(
        "heap now: {} bytes in {} blocks ({:.1} KiB per call in flight, every part of this process)",
        stats.curr_bytes,
        stats.curr_blocks,
        stats.curr_bytes as f64 / 1024.0 / n as f64
    );
    // The profile's end ("t-end") is this moment: every call in flight.
    drop(profiler);
    llm.release();
    let mut ok = 0;
    for call in calls {
        if matches!(call.await, Ok(Ok(200))) {
            ok += 1;
        }
    }
    println!("{ok} of {n} answered 200 in {:?}", started.elapsed());
}
