//! Ten thousand calls in flight (issue 31): the release binaries as their own processes, a
//! loopback model answering every call in `model_s` (10 s), and this program sending `calls`
//! (10,000) paid calls at once, each with its own freshly signed authorization:
//!
//! - on the embedded default (`api` alone: SQLite, in-process worker) and on PostgreSQL + Redis
//!   (`api` and one `worker`), it prints calls/s (ideal: `calls / model_s`), errors, p50/p99 of
//!   the time beyond the model's, the peak RSS of Grove's processes, and KiB per call in flight
//!   (peak RSS less the RSS before the first batch, over the calls), the same from the RSS just
//!   before the model's first answer, every call waiting (a call's cost while it waits, without
//!   the transient memory of admission and of the answers' burst), and the peak count of open
//!   file descriptors of the api, the worker and this program (each may hold at most
//!   `ulimit -Hn`). The batch runs twice: the first opens every connection (client to api, api
//!   to model), the second finds them open. The processes call the model with `LLM_HTTP2` =
//!   `llm_http2` (default `prior-knowledge`: every model call of a process a stream of one h2c
//!   connection; `auto`: HTTP/1.1, a connection per call in flight on both sides), and the
//!   facilitator with `X402_FACILITATOR_HTTP2=prior-knowledge` (a real one is https://, HTTP/2
//!   by ALPN);
//! - an overload run: unpaid requests arriving at twice what the workers finish
//!   (`2 × capacity / model_s` a second, capacity `WORKER_CONCURRENCY` = `overload_jobs`), each
//!   paying when priced: it prints the refusals (503 before any payment), the calls settled, the
//!   ones delivered, and the settled calls that did not deliver (which must be none).
//!
//! `cargo build --release -p grove-api -p grove-worker && ulimit -n 65536 &&
//!  cargo run --release -p grove-bench --bin inflight -- [calls] [model_s] [overload_jobs] [overload_s] [only] [llm_http2]`
//! (`only`: `embedded` or `postgres`, or `all`; `GROVE_BENCH_ENV` adds settings to the
//! service's, `grove_bench::experiment_env`.)

use futures::future::join_all;
use grove_bench::paid;
use grove_tests::{
    PAY_TO, TestDb,
    api_process::ApiProcess,
    facilitator::FakeFacilitator,
    llm::{FakeLlm, Reply},
    x402::{PayOptions, TestWallet},
};
use std::{
    collections::BTreeMap,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let bin = exe.with_file_name(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release -p grove-api -p grove-worker` first",
        bin.display()
    );
    bin
}

/// Open file descriptors of a process (sockets included).
fn fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Grove {
    api: ApiProcess,
    worker: Option<Child>,
    _db: TestDb,
}

impl Drop for Grove {
    fn drop(&mut self) {
        if let Some(w) = &mut self.worker {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

impl Grove {
    fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.api.pid()];
        pids.extend(self.worker.as_ref().map(Child::id));
        pids
    }

    fn rss_kib(&self) -> u64 {
        self.pids().into_iter().map(rss_kib).sum()
    }
}

async fn start(
    distributed: bool,
    jobs: usize,
    deadline_s: u64,
    facilitator: &FakeFacilitator,
    llm: &FakeLlm,
    llm_http2: &str,
) -> Grove {
    let db = TestDb::on(if distributed { "postgres" } else { "sqlite" }).await;
    let namespace = format!("inflight{}", rand::random::<u32>());
    let mut env: Vec<(String, String)> = [
        ("WORKER_CONCURRENCY", jobs.to_string()),
        ("CALL_DEADLINE_S", deadline_s.to_string()),
        ("APP_ENV", "development".into()),
        ("BIND_ADDR", "127.0.0.1:0".into()),
        ("PUBLIC_BASE_URL", "http://127.0.0.1".into()),
        ("X402_PAY_TO", PAY_TO.into()),
        ("X402_FACILITATOR_URL", facilitator.url().into()),
        // A real facilitator is https://, where ALPN picks HTTP/2: a burst of settles is streams
        // of one connection. Over this plain http:// fake, HTTP/1.1 would open a connection per
        // settle in flight (6,500 at once at 10,000 calls, in the api and again in this program,
        // on top of the 10,000 callers' sockets: near the 20,000 open files a process may hold).
        ("X402_FACILITATOR_HTTP2", "prior-knowledge".into()),
        ("LLM_PROVIDER", "openai".into()),
        ("LLM_API_KEY", "test".into()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("LLM_HTTP2", llm_http2.into()),
        ("DATABASE_URL", db.url.clone()),
        // A bench client is one address: the per-address limit is not what is measured.
        ("RATE_LIMIT_PER_IP_PER_MIN", "0".into()),
        ("RUST_LOG", "warn,api=info".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    env.extend(grove_bench::experiment_env());
    if distributed {
        env.push(("REDIS_URL".into(), "redis://127.0.0.1:6379".into()));
        env.push(("QUEUE_NAMESPACE".into(), namespace));
    }
    let api = ApiProcess::start_binary(&binary("api"), &env).await;
    let worker = distributed.then(|| {
        Command::new(binary("worker"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the worker starts")
    });
    Grove {
        api,
        worker,
        _db: db,
    }
}

fn client() -> reqwest::Client {
    let builder = grove_common::http_client::builder()
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(300))
        .timeout(Duration::from_secs(600));
    // Ten thousand connections at once overflow the api's listen queue (1,024, tokio's default):
    // the kernel drops the handshake's last ACK, so the caller believes itself connected and its
    // request goes unacknowledged until the api accepts it, which a busy api may take more than
    // 30 s to do. reqwest's default TCP_USER_TIMEOUT (30 s) then aborts the connection
    // ("Connection timed out"); without it the call waits, and its wait is measured.
    #[cfg(target_os = "linux")]
    let builder = builder.tcp_user_timeout(None);
    builder.build().expect("client")
}

struct Batch {
    calls: usize,
    errors: usize,
    wall: Duration,
    beyond_p50_ms: f64,
    beyond_p99_ms: f64,
    rss_peak_kib: u64,
    /// The last RSS sampled while every call of the batch was at the model and none had its
    /// answer (the moment before the answers): what the calls cost while they wait, once
    /// admission's transient memory has gone back. 0 when no sample fell in that window.
    rss_waiting_kib: u64,
    /// The calls that did not deliver, by what they got instead.
    failures: BTreeMap<String, usize>,
    /// The api's warnings and errors during the batch, by message and error.
    api_warnings: BTreeMap<String, usize>,
    /// Peak open file descriptors: api, worker (0 when embedded), this program.
    fds_peak: [u64; 3],
}

/// `n` paid calls sent at once; the time each took beyond `model`.
async fn batch(
    grove: &Grove,
    http: &reqwest::Client,
    llm: &FakeLlm,
    n: usize,
    from: usize,
    model: Duration,
) -> Batch {
    let ch = paid::challenge(&grove.api.url).await;
    let prepared = paid::bodies_and_payments(&ch, from, n);
    let peak = Arc::new(AtomicU64::new(grove.rss_kib()));
    let waiting = Arc::new(AtomicU64::new(0));
    let (received_before, completed_before) = (llm.received(), llm.completed());
    let pids = grove.pids();
    let fd_peaks: Arc<[AtomicU64; 3]> = Arc::default();
    let processes = [
        Some(grove.api.pid()),
        grove.worker.as_ref().map(Child::id),
        Some(std::process::id()),
    ];
    let sampler = {
        let (peak, fd_peaks) = (Arc::clone(&peak), Arc::clone(&fd_peaks));
        let (waiting, llm) = (Arc::clone(&waiting), llm.clone());
        tokio::spawn(async move {
            loop {
                // Read before the RSS: a sample counts as waiting only if every call had
                // reached the model before it was taken and none was answered after.
                let all_asked = llm.received() >= received_before + n;
                let rss = pids.iter().copied().map(rss_kib).sum();
                if all_asked && llm.completed() == completed_before {
                    waiting.store(rss, Relaxed);
                }
                peak.fetch_max(rss, Relaxed);
                for (pid, fd_peak) in processes.iter().zip(fd_peaks.iter()) {
                    fd_peak.fetch_max(pid.map_or(0, fds), Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let url = format!("{}{}", grove.api.url, paid::PATH);
    let log_from = grove.api.log().len();
    let began = Instant::now();
    let calls = prepared.into_iter().map(|(body, payment)| {
        let request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("payment-signature", payment)
            .body(body);
        tokio::spawn(async move {
            let sent = Instant::now();
            // Why a call did not deliver: its status and the start of its body, or the error.
            let failure = match request.send().await {
                Ok(r) if r.status() == 200 => None,
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().await.unwrap_or_default();
                    Some(format!(
                        "{status} {}",
                        body.chars().take(100).collect::<String>()
                    ))
                }
                Err(e) => Some(grove_worker::log_text::error_chain(&e)),
            };
            (failure, sent.elapsed())
        })
    });
    let mut failures = BTreeMap::<String, usize>::new();
    let results: Vec<(bool, Duration)> = join_all(calls)
        .await
        .into_iter()
        .map(|r| match r {
            Ok((None, took)) => (true, took),
            Ok((Some(why), took)) => {
                *failures.entry(why).or_default() += 1;
                (false, took)
            }
            Err(e) => {
                *failures.entry(e.to_string()).or_default() += 1;
                (false, Duration::ZERO)
            }
        })
        .collect();
    let wall = began.elapsed();
    sampler.abort();
    let mut beyond: Vec<f64> = results
        .iter()
        .filter(|(ok, _)| *ok)
        .map(|(_, t)| t.saturating_sub(model).as_secs_f64() * 1000.0)
        .collect();
    beyond.sort_by(f64::total_cmp);
    let at = |p: f64| {
        beyond
            .get(((beyond.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Batch {
        calls: n,
        errors: results.iter().filter(|(ok, _)| !ok).count(),
        wall,
        beyond_p50_ms: at(0.5),
        beyond_p99_ms: at(0.99),
        rss_peak_kib: peak.load(Relaxed),
        rss_waiting_kib: waiting.load(Relaxed),
        fds_peak: std::array::from_fn(|i| fd_peaks[i].load(Relaxed)),
        failures,
        api_warnings: warnings(&grove.api.log()[log_from..]),
    }
}

/// Warning and error lines of the api's JSON log, counted by message and error.
fn warnings(log: &str) -> BTreeMap<String, usize> {
    let mut counted = BTreeMap::new();
    for line in log.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if !matches!(v["level"].as_str(), Some("WARN" | "ERROR")) {
            continue;
        }
        // Events are flattened: the message and its fields at the top level.
        let message = v["message"].as_str();
        let error = ["error", "reason", "cause"]
            .iter()
            .find_map(|k| v[*k].as_str());
        let what = format!(
            "{}: {}",
            message.unwrap_or("?"),
            error.unwrap_or("").chars().take(400).collect::<String>()
        );
        *counted.entry(what).or_default() += 1;
    }
    counted
}

/// Open-loop arrivals at `rate` a second for `secs`: each asks unpaid, pays when priced.
async fn overload(grove: &Grove, http: &reqwest::Client, rate: f64, secs: u64) -> [usize; 5] {
    let wallet = Arc::new(TestWallet::new());
    let url = Arc::new(format!("{}{}", grove.api.url, paid::PATH));
    let counts: Arc<[AtomicUsize; 5]> = Arc::default();
    let mut tasks = Vec::new();
    let every = Duration::from_secs_f64(1.0 / rate);
    let mut tick = tokio::time::interval(every);
    let n = (rate * secs as f64) as usize;
    for i in 0..n {
        tick.tick().await;
        let (http, wallet, url, counts) = (
            http.clone(),
            Arc::clone(&wallet),
            Arc::clone(&url),
            Arc::clone(&counts),
        );
        tasks.push(tokio::spawn(async move {
            let mut b = grove_tests::llm::caller_body("diagnose_growth");
            // The sample's own words (the model's scripted answer is judged against them), made
            // unique per caller.
            let text = b["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            b["messages"][0]["content"] = format!("{text} (overload caller {i})").into();
            let body = b.to_string();
            let post = |payment: Option<String>| {
                let mut r = http
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .body(body.clone());
                if let Some(p) = payment {
                    r = r.header("payment-signature", p);
                }
                r.send()
            };
            // [refused, priced, settled and delivered, settled and not delivered, other]
            let Ok(r) = post(None).await else {
                counts[4].fetch_add(1, Relaxed);
                return;
            };
            match r.status().as_u16() {
                503 => {
                    counts[0].fetch_add(1, Relaxed);
                }
                402 => {
                    counts[1].fetch_add(1, Relaxed);
                    let quote = r.headers()["payment-required"]
                        .to_str()
                        .unwrap_or_default()
                        .to_owned();
                    let payment = wallet.pay(&quote, PayOptions::default());
                    match post(Some(payment)).await {
                        Ok(r) if r.status() == 200 => counts[2].fetch_add(1, Relaxed),
                        answer => {
                            if let Ok(r) = answer {
                                let status = r.status();
                                let body = r.text().await.unwrap_or_default();
                                eprintln!("paid, not delivered: {status} {:.120}", body);
                            } else if let Err(e) = answer {
                                eprintln!("paid, not delivered: {e}");
                            }
                            counts[3].fetch_add(1, Relaxed)
                        }
                    };
                }
                _ => {
                    counts[4].fetch_add(1, Relaxed);
                }
            }
        }));
    }
    join_all(tasks).await;
    std::array::from_fn(|i| counts[i].load(Relaxed))
}

#[tokio::main]
async fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let calls: usize = arg(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let model_s: u64 = arg(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let overload_jobs: usize = arg(3).and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let overload_s: u64 = arg(4).and_then(|s| s.parse().ok()).unwrap_or(40);
    let only = arg(5).filter(|o| o != "all");
    let llm_http2 = arg(6).unwrap_or_else(|| "prior-knowledge".into());
    let model = Duration::from_secs(model_s);
    let facilitator = FakeFacilitator::start().await;
    let llm = FakeLlm::start().await;
    let http = client();
    println!(
        "grove-bench inflight: {calls} paid calls at once, model answering in {model_s} s (ideal {:.0} calls/s); release binaries as their own processes, LLM_HTTP2={llm_http2}",
        calls as f64 / model_s as f64
    );
    println!(
        "{:<28} {:>6} {:>6} {:>8} {:>13} {:>13} {:>13} {:>13} {:>16} {:>13} {:>24}",
        "run",
        "calls",
        "errors",
        "calls/s",
        "p50 beyond ms",
        "p99 beyond ms",
        "peak RSS MiB",
        "KiB/in flight",
        "waiting RSS MiB",
        "KiB/waiting",
        "peak fds api/worker/bench"
    );
    let mut from = 0;
    for (name, distributed) in [("embedded", false), ("postgres", true)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let connections_before = (llm.connections(), facilitator.connections());
        let grove = start(distributed, calls + 100, 60, &facilitator, &llm, &llm_http2).await;
        // A few calls first, so the baseline has its pools and caches.
        llm.script(std::iter::repeat_n(Reply::Valid, 20));
        let warm = batch(&grove, &http, &llm, 20, from, Duration::ZERO).await;
        from += 20;
        assert_eq!(warm.errors, 0, "warm-up calls failed");
        let baseline = grove.rss_kib();
        for round in ["first", "second"] {
            llm.script(std::iter::repeat_n(Reply::Slow(model), calls));
            let b = batch(&grove, &http, &llm, calls, from, model).await;
            from += calls;
            let [api_fds, worker_fds, bench_fds] = b.fds_peak;
            println!(
                "{:<28} {:>6} {:>6} {:>8.0} {:>13.1} {:>13.1} {:>13.1} {:>13.1} {:>16.1} {:>13.1} {:>24}",
                format!("{name}, {round} batch"),
                b.calls,
                b.errors,
                (b.calls - b.errors) as f64 / b.wall.as_secs_f64(),
                b.beyond_p50_ms,
                b.beyond_p99_ms,
                b.rss_peak_kib as f64 / 1024.0,
                b.rss_peak_kib.saturating_sub(baseline) as f64 / calls as f64,
                b.rss_waiting_kib as f64 / 1024.0,
                b.rss_waiting_kib.saturating_sub(baseline) as f64 / calls as f64,
                format!("{api_fds}/{worker_fds}/{bench_fds}"),
            );
            for (why, n) in &b.failures {
                println!("    {n} × {why}");
            }
            for (what, n) in &b.api_warnings {
                println!("    api logged {n} × {what}");
            }
        }
        // The whole log, for a run that went wrong.
        let log_path = std::env::temp_dir().join(format!("inflight-{name}-api.log"));
        let _ = std::fs::write(&log_path, grove.api.log());
        println!(
            "  ({name}: RSS before the first batch {:.1} MiB; connections to the model {}, to the facilitator {}; api log in {})",
            baseline as f64 / 1024.0,
            llm.connections() - connections_before.0,
            facilitator.connections() - connections_before.1,
            log_path.display()
        );
    }
    println!(
        "KiB/in flight: (peak RSS - RSS before the first batch) / calls, api and worker together;\n\
         the peak includes the transient memory of admission and of the answers' burst.\n\
         KiB/waiting: the same from the last RSS sampled while every call was at the model and\n\
         none answered, just before the answers (0 or less: no sample fell in that window).\n\
         peak fds: open file descriptors (/proc/<pid>/fd), each process limited to {} (`ulimit -Hn`).",
        hard_fd_limit()
    );

    // Overload: arrivals at twice what `overload_jobs` slots finish with this model.
    let rate = 2.0 * overload_jobs as f64 / model_s as f64;
    println!(
        "overload: {overload_jobs} jobs, model {model_s} s (capacity {:.0} calls/s), arrivals {rate:.0}/s for {overload_s} s, CALL_DEADLINE_S=30",
        overload_jobs as f64 / model_s as f64
    );
    println!(
        "{:<12} {:>8} {:>9} {:>8} {:>10} {:>22} {:>6}",
        "run", "arrived", "refused", "priced", "delivered", "settled, not delivered", "other"
    );
    for (name, distributed) in [("embedded", false), ("postgres", true)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let grove = start(
            distributed,
            overload_jobs,
            30,
            &facilitator,
            &llm,
            &llm_http2,
        )
        .await;
        let settled_before = facilitator.transfers();
        llm.script(std::iter::repeat_n(
            Reply::Slow(model),
            (rate * overload_s as f64) as usize,
        ));
        let [refused, priced, delivered, not_delivered, other] =
            overload(&grove, &http, rate, overload_s).await;
        println!(
            "{:<12} {:>8} {:>9} {:>8} {:>10} {:>22} {:>6}",
            name,
            refused + priced + other,
            refused,
            priced,
            delivered,
            not_delivered,
            other
        );
        println!(
            "  settlements {}; model calls answered so far {}",
            facilitator.transfers() - settled_before,
            llm.completed()
        );
    }
}

/// This process's hard limit on open files (`Max open files` in /proc/self/limits).
fn hard_fd_limit() -> String {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}
