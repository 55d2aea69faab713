//! Where the memory of a call in flight goes: the embedded api in this process, `N` paid coaching
//! calls held at the model at once (the loopback model answers none until all are waiting), and
//! the process ends right then, so the heap's peak is that moment. Run under heaptrack, which
//! records every allocation with its stack (the feature `heap-profile` puts this program on the
//! system allocator, which heaptrack intercepts):
//!
//! ```sh
//! cargo build --release -p grove-bench --features heap-profile --bin heap
//! heaptrack -o /tmp/grove-heap target/release/heap 2000 [complete]
//! heaptrack_print -f /tmp/grove-heap.zst --print-peaks -n 40
//! ```
//!
//! The load generator, the fake model and the fake facilitator run in this process too: their
//! allocations are in the profile under their own frames (`grove_tests`, `grove_bench`, and the
//! client side of `hyper`), to be set aside when reading it. `--bin inflight` measures the real
//! binaries' resident memory per call in flight.

use grove_bench::paid;
use grove_common::config::Config;
use grove_tests::{
    PAY_TO, TestDb, default_env,
    facilitator::FakeFacilitator,
    free_port,
    llm::{FakeLlm, Reply},
};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    // `complete`: the model then answers every call at once, and the program ends when every
    // caller has its answer, so the peak may be the burst of answers rather than the wait.
    let complete = std::env::args().nth(2).as_deref() == Some("complete");
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
        // As `--bin inflight` runs them: every model call and settle a stream of one h2c
        // connection, so the profile holds what a call in flight costs there.
        ("LLM_HTTP2", "prior-knowledge".into()),
        ("X402_FACILITATOR_HTTP2", "prior-knowledge".into()),
        ("WORKER_CONCURRENCY", n.max(1).to_string()),
        ("CALL_DEADLINE_S", "300".into()),
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
    let started = Instant::now();
    let client = grove_common::http_client::builder()
        .no_proxy()
        .pool_max_idle_per_host(n)
        .build()
        .expect("client");
    let mut calls = tokio::task::JoinSet::new();
    for (body, payment) in prepared {
        let client = client.clone();
        let url = format!("{base}{}", paid::PATH);
        calls.spawn(async move {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .header("payment-signature", payment)
                .body(body)
                .send()
                .await?;
            let status = response.status();
            response.bytes().await.map(|_| status)
        });
    }
    while llm.received() < n {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A settled moment with every call in flight, then the end: the heap's peak is here.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "{n} calls waiting at the model after {:?}",
        started.elapsed()
    );
    if complete {
        llm.release();
        let mut delivered = 0;
        while let Some(call) = calls.join_next().await {
            if matches!(call, Ok(Ok(status)) if status.is_success()) {
                delivered += 1;
            }
        }
        println!(
            "the model answered: {delivered} of {n} calls delivered after {:?}",
            started.elapsed()
        );
    } else {
        println!("exiting with them in flight");
    }
    std::process::exit(0);
}
