//! Scale-out, measured (issue 27): does adding workers add capacity? For 1, 2 and 4 `worker`
//! processes: one `api` (release binaries, as separate processes), PostgreSQL (a fresh database
//! on 127.0.0.1:5432), a private Redis, a model that answers in 2 s, and a backlog of paid calls
//! made before the workers start (every call settled and its job waiting). Prints, per step,
//! throughput and drain time, and the replica count KEDA's formula gives from the metric the
//! ScaledObject reads (`/metrics/queues`: backlog = ready + held jobs; desired =
//! ceil(backlog / targetValue), clamped to [minReplicaCount, maxReplicaCount]) at the start,
//! halfway and at the end of the drain; and each process's CPU and peak memory, which the
//! manifests' resource requests come from.
//!
//! `cargo build --release --bin api --bin worker && cargo run --release -p grove-bench --bin scale_out -- [calls] [workers,...]`
//! (defaults: 2000 calls; 1,2,4 workers). Needs PostgreSQL on 127.0.0.1:5432 (trust) and
//! `redis-server` on PATH.

use grove_bench::paid::{PATH, bodies_and_payments, challenge};
use grove_tests::{
    PAY_TO, TestDb,
    facilitator::FakeFacilitator,
    free_port,
    llm::{FakeLlm, Reply},
    queue_rig::PrivateRedis,
};
use sea_orm::{ConnectionTrait, Statement};
use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const MODEL: Duration = Duration::from_secs(2);
/// The ScaledObject's target and the workers' `WORKER_CONCURRENCY`, as
/// deploy/kubernetes/base (worker-scaler.yaml, configmap.yaml) sets them.
const TARGET: u64 = 32;
const MIN_REPLICAS: u64 = 1;
const MAX_REPLICAS: u64 = 20;

fn keda_replicas(backlog: u64) -> u64 {
    backlog.div_ceil(TARGET).clamp(MIN_REPLICAS, MAX_REPLICAS)
}

fn bin(name: &str) -> PathBuf {
    let dir = std::env::var_os("GROVE_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .expect("own path")
                .parent()
                .expect("dir")
                .to_path_buf()
        });
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: cargo build --release --bin api --bin worker",
        path.display()
    );
    path
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(name: &str, env: &[(String, String)]) -> Proc {
    Proc(
        Command::new(bin(name))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    )
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Step {
    workers: usize,
    calls: usize,
    drain: Duration,
    /// Completions per second between 10 % and 90 % done (start-up and the tail left out).
    steady: f64,
    keda: [u64; 3],
    backlog: [u64; 3],
    worker_cpu_ms_per_call: f64,
    worker_rss_mib: f64,
    api_rss_mib: f64,
}

async fn step(workers: usize, calls: usize, facilitator: &FakeFacilitator, llm: &FakeLlm) -> Step {
    let db = TestDb::on("postgres").await;
    let redis = PrivateRedis::start(false).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    // KEDA reads the queues from the admin listener.
    let admin_port = free_port();
    let admin = format!("http://127.0.0.1:{admin_port}");
    let env: Vec<(String, String)> = [
        ("BIND_ADDR", format!("127.0.0.1:{port}")),
        ("ADMIN_ADDR", format!("127.0.0.1:{admin_port}")),
        ("PUBLIC_BASE_URL", "http://127.0.0.1".to_owned()),
        ("X402_PAY_TO", PAY_TO.to_owned()),
        ("X402_FACILITATOR_URL", facilitator.url().to_owned()),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.openai_base()),
        ("DATABASE_URL", db.url.clone()),
        ("REDIS_URL", redis.url()),
        ("QUEUE_NAMESPACE", "scale".to_owned()),
        // The backlog waits for the workers: no call may time out meanwhile.
        ("CALL_DEADLINE_S", "600".to_owned()),
        ("WORKER_CONCURRENCY", TARGET.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let api = spawn("api", &env);
    let http = grove_common::http_client::builder()
        .no_proxy()
        .pool_max_idle_per_host(64)
        .timeout(Duration::from_secs(900))
        .build()
        .expect("client");
    let until = Instant::now() + Duration::from_secs(60);
    while !http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(Instant::now() < until, "the api did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    llm.script(std::iter::repeat_n(Reply::Slow(MODEL), calls));
    let prepared = bodies_and_payments(&challenge(&base).await, 0, calls);
    // The backlog: every call paid and waiting before any worker runs.
    // One connection per call: each waits for its result (the api answers when a worker has
    // run it), as a paying agent does.
    let mut clients = Vec::with_capacity(calls);
    for (body, payment) in prepared {
        let (http, url) = (http.clone(), format!("{base}{PATH}"));
        clients.push(tokio::spawn(async move {
            http.post(url)
                .header("content-type", "application/json")
                .header("payment-signature", payment)
                .body(body)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0)
        }));
    }
    let queues = async || -> (u64, u64) {
        let v: serde_json::Value = match http.get(format!("{admin}/metrics/queues")).send().await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
        let c = &v["queues"]["coaching"];
        (
            c["ready"].as_u64().unwrap_or(0),
            c["backlog"].as_u64().unwrap_or(0),
        )
    };
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let (ready, _) = queues().await;
        if ready as usize >= calls {
            break;
        }
        assert!(
            Instant::now() < until,
            "the backlog never filled ({ready} of {calls} ready)"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let completed_db = grove_common::db::connect_url(&db.url).await.expect("db");
    let completed = async || -> u64 {
        completed_db
            .query_one_raw(Statement::from_string(
                sea_orm::DatabaseBackend::Postgres,
                "SELECT count(*) AS n FROM calls WHERE status = 'completed'",
            ))
            .await
            .ok()
            .flatten()
            .and_then(|r| r.try_get::<i64>("", "n").ok())
            .unwrap_or(0) as u64
    };

    let (_, backlog0) = queues().await;
    let t0 = Instant::now();
    let mut procs: Vec<Proc> = (0..workers).map(|_| spawn("worker", &env)).collect();
    let pids: Vec<u32> = procs.iter().map(|p| p.0.id()).collect();
    let cpu0: Vec<u64> = pids
        .iter()
        .map(|p| grove_bench::cpu::cpu_us(*p, false))
        .collect();
    let (mut at10, mut at90, mut half_backlog, mut worker_rss) = (None, None, None, 0u64);
    let mut api_rss = 0u64;
    let total = calls as u64;
    let (drain, end_backlog) = loop {
        let done = completed().await;
        let (_, backlog) = queues().await;
        worker_rss = worker_rss.max(pids.iter().map(|p| rss_kib(*p)).max().unwrap_or(0));
        api_rss = api_rss.max(rss_kib(api.0.id()));
        if at10.is_none() && done * 10 >= total {
            at10 = Some((t0.elapsed(), done));
        }
        if half_backlog.is_none() && done * 2 >= total {
            half_backlog = Some(backlog);
        }
        if at90.is_none() && done * 10 >= total * 9 {
            at90 = Some((t0.elapsed(), done));
        }
        if done >= total {
            break (t0.elapsed(), backlog);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(900),
            "not drained: {done} of {total}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let cpu: u64 = pids
        .iter()
        .zip(&cpu0)
        .map(|(p, c)| grove_bench::cpu::cpu_us(*p, false).saturating_sub(*c))
        .sum();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for c in clients {
        *statuses.entry(c.await.unwrap_or(0)).or_default() += 1;
    }
    assert_eq!(
        statuses.get(&200),
        Some(&calls),
        "every call answered 200: {statuses:?}"
    );
    procs.clear();
    drop(api);
    let ((t10, d10), (t90, d90)) = (at10.expect("10 %"), at90.expect("90 %"));
    let half = half_backlog.unwrap_or(0);
    Step {
        workers,
        calls,
        drain,
        steady: (d90 - d10) as f64 / (t90 - t10).as_secs_f64(),
        keda: [
            keda_replicas(backlog0),
            keda_replicas(half),
            keda_replicas(end_backlog),
        ],
        backlog: [backlog0, half, end_backlog],
        worker_cpu_ms_per_call: cpu as f64 / 1000.0 / calls as f64,
        worker_rss_mib: worker_rss as f64 / 1024.0,
        api_rss_mib: api_rss as f64 / 1024.0,
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let steps: Vec<usize> = args
        .next()
        .map(|s| s.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4]);
    let facilitator = FakeFacilitator::start().await;
    let llm = FakeLlm::start().await;
    eprintln!(
        "grove-bench scale_out: {calls} paid calls waiting before the workers start; model {} s; WORKER_CONCURRENCY {TARGET}; workers {steps:?}",
        MODEL.as_secs()
    );
    let mut rows = vec![];
    for n in steps {
        eprintln!("[{n} worker(s)] filling the backlog, then draining it");
        let s = step(n, calls, &facilitator, &llm).await;
        eprintln!("[{n} worker(s)] drained in {:.1} s", s.drain.as_secs_f64());
        rows.push(s);
    }
    let base = rows
        .first()
        .map_or(1.0, |r| r.calls as f64 / r.drain.as_secs_f64());
    println!(
        "| workers | calls | drain time (s) | throughput (calls/s) | × 1 worker | steady 10-90 % (calls/s) | ideal (calls/s) | backlog start / half / end | KEDA replicas start / half / end | worker CPU ms/call | worker peak RSS (MiB) | api peak RSS (MiB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|");
    for r in &rows {
        let throughput = r.calls as f64 / r.drain.as_secs_f64();
        let ideal = (r.workers as u64 * TARGET) as f64 / MODEL.as_secs_f64();
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.0} | {} / {} / {} | {} / {} / {} | {:.2} | {:.1} | {:.1} |",
            r.workers,
            r.calls,
            r.drain.as_secs_f64(),
            throughput,
            throughput / base,
            r.steady,
            ideal,
            r.backlog[0],
            r.backlog[1],
            r.backlog[2],
            r.keda[0],
            r.keda[1],
            r.keda[2],
            r.worker_cpu_ms_per_call,
            r.worker_rss_mib,
            r.api_rss_mib
        );
    }
    println!(
        "KEDA: desired = ceil(backlog / {TARGET}) clamped to [{MIN_REPLICAS}, {MAX_REPLICAS}], backlog = ready + held coaching jobs (GET /metrics/queues). Model calls answered: {}; settlements: {}.",
        llm.completed(),
        facilitator.transfers()
    );
}
