//! How a paid call's cost grows with work, on the `api` binary itself (embedded default: SQLite,
//! in-process worker) as its own process, so its CPU time and memory are its own:
//!
//! - paid-call throughput at 1, 16, 64 and 256 connections with an instant model;
//! - the same with the model taking 2 s per answer: how many calls are in flight at once
//!   (Little's law: throughput × mean latency), and the memory the process holds for them.
//!
//! `cargo build --release -p grove-api && cargo run --release -p grove-bench --bin scale -- [seconds]`
//! Facilitator and model are the loopback fakes of the tests (instant unless told otherwise);
//! the load generator runs in this process, so it never counts towards the server's CPU.

use grove_bench::{load, paid};
use grove_common::config::DEFAULT_WORKER_CONCURRENCY;
use grove_tests::{
    PAY_TO, TestDb,
    api_process::ApiProcess,
    facilitator::FakeFacilitator,
    llm::{FakeLlm, Reply},
};
use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

const SLOW_MODEL: Duration = Duration::from_secs(2);

/// The release `api` beside this program (target/release/api), or GROVE_API_BIN.
fn api_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("GROVE_API_BIN") {
        return p.into();
    }
    let exe = std::env::current_exe().expect("own path");
    let bin = exe.with_file_name("api");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release -p grove-api` first",
        bin.display()
    );
    bin
}

/// Resident memory of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Server {
    api: ApiProcess,
    _db: TestDb,
}

async fn server(facilitator: &FakeFacilitator, llm: &FakeLlm, worker_concurrency: usize) -> Server {
    let db = TestDb::on("sqlite").await;
    let concurrency = worker_concurrency.to_string();
    let env: Vec<(String, String)> = [
        ("WORKER_CONCURRENCY", concurrency.as_str()),
        ("APP_ENV", "development"),
        ("BIND_ADDR", "127.0.0.1:0"),
        ("PUBLIC_BASE_URL", "http://127.0.0.1"),
        ("X402_PAY_TO", PAY_TO),
        ("X402_FACILITATOR_URL", facilitator.url()),
        ("LLM_PROVIDER", "openai"),
        ("LLM_API_KEY", "test"),
        ("LLM_BASE_URL", &llm.openai_base()),
        ("DATABASE_URL", &db.url),
        // Warnings only, as grove.sh runs it, and the binary's own "listening" line.
        ("RUST_LOG", "warn,api=info"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let api = ApiProcess::start_binary(&api_binary(), &env).await;
    Server { api, _db: db }
}

struct Row {
    label: String,
    report: load::Report,
    cpu_us_per_call: f64,
    rss_peak_kib: u64,
    mean_ms: f64,
}

/// One measured run against `server`: `connections` clients for `secs`, at most `max` calls.
async fn measure(
    label: String,
    server: &Server,
    prepared: Arc<Vec<(Vec<u8>, String)>>,
    connections: usize,
    secs: u64,
) -> Row {
    let pid = server.api.pid();
    let rss_idle_kib = rss_kib(pid);
    let peak = Arc::new(AtomicU64::new(rss_idle_kib));
    let sampler = {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let cpu_before = grove_bench::cpu::cpu_us(pid, false);
    let base = server.api.url.clone();
    let max = prepared.len();
    let report = load::run_bounded(
        &label,
        connections,
        Duration::ZERO,
        Duration::from_secs(secs),
        max,
        move |i| paid::paid_request(&base, &prepared, i),
    )
    .await;
    let cpu = grove_bench::cpu::cpu_us(pid, false).saturating_sub(cpu_before);
    sampler.abort();
    let calls = report.requests.max(1) as f64;
    // Closed loop: each connection is always waiting on one call.
    let mean_ms = connections as f64 * report.elapsed.as_secs_f64() * 1000.0 / calls;
    Row {
        label,
        cpu_us_per_call: cpu as f64 / calls,
        rss_peak_kib: peak.load(Ordering::Relaxed),
        mean_ms,
        report,
    }
}

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let facilitator = FakeFacilitator::start().await;
    let llm = FakeLlm::start().await;
    println!(
        "grove-bench scale: the release `api` (embedded: SQLite, in-process worker) as its own process; {secs} s per run; loopback fake facilitator and model"
    );
    let mut rows = Vec::new();
    let mut next = 0usize;

    // Instant model: throughput as connections grow.
    let s = server(&facilitator, &llm, DEFAULT_WORKER_CONCURRENCY).await;
    let ch = paid::challenge(&s.api.url).await;
    for connections in [1usize, 16, 64, 256] {
        // Enough distinct paid calls for the run (about 1,000 a second at most here).
        let n = (secs as usize * 1200).max(connections * 4);
        let prepared = Arc::new(paid::bodies_and_payments(&ch, next, n));
        next += n;
        let label = format!("instant model, {connections} conn");
        rows.push(measure(label, &s, prepared, connections, secs).await);
    }
    drop(s);

    // A model that takes 2 s: calls in flight, and what they hold. With the default
    // WORKER_CONCURRENCY of before issue 31 (32 jobs at once) the rest wait in the queue; with
    // 256 they all run.
    let mut slow_rss = Vec::new();
    for (concurrency, runs) in [(32, &[256usize][..]), (256, &[64, 256][..])] {
        let s = server(&facilitator, &llm, concurrency).await;
        let ch = paid::challenge(&s.api.url).await;
        for &connections in runs {
            let n = connections * (secs as usize / 2 + 2);
            llm.script(std::iter::repeat_n(Reply::Slow(SLOW_MODEL), n));
            let prepared = Arc::new(paid::bodies_and_payments(&ch, next, n));
            next += n;
            let label = format!("2 s model, {connections} conn, {concurrency} jobs");
            let row = measure(label, &s, prepared, connections, secs.max(10)).await;
            if concurrency == 256 {
                slow_rss.push((connections, row.rss_peak_kib));
            }
            rows.push(row);
            // Let the calls of this run finish before the next one measures.
            tokio::time::sleep(SLOW_MODEL * 2).await;
        }
    }

    println!(
        "{:<34} {:>7} {:>6} {:>8} {:>8} {:>8} {:>11} {:>9} {:>9}",
        "run",
        "calls",
        "errors",
        "calls/s",
        "p50 ms",
        "p99 ms",
        "CPU µs/call",
        "in flight",
        "RSS MiB"
    );
    for r in &rows {
        let in_flight = r.report.rps() * r.mean_ms / 1000.0;
        println!(
            "{:<34} {:>7} {:>6} {:>8.0} {:>8.1} {:>8.1} {:>11.0} {:>9.0} {:>9.1}",
            r.label,
            r.report.requests,
            r.report.errors,
            r.report.rps(),
            r.report.p50_us as f64 / 1000.0,
            r.report.p99_us as f64 / 1000.0,
            r.cpu_us_per_call,
            in_flight,
            r.rss_peak_kib as f64 / 1024.0,
        );
    }
    println!(
        "in flight: calls/s × mean latency (Little's law), queued ones included. RSS: the api process's peak resident memory during the run."
    );
    if let [(c1, m1), (c2, m2)] = slow_rss[..] {
        println!(
            "memory per call in flight (2 s model, 256 jobs, {c1} -> {c2} connections): {:.0} KiB",
            m2.saturating_sub(m1) as f64 / (c2 - c1) as f64
        );
    }
    println!(
        "model calls answered: {}; settlements: {}",
        llm.completed(),
        facilitator.transfers()
    );
}
