//! Paid-call overhead: the whole paid path (verify, idempotency, reserve, settle, enqueue,
//! worker, model, validation, store, notify, respond) with a zero-latency loopback facilitator
//! and model, beside the sandbox path in the same run; and replay latency.
//!
//! `cargo run --release -p grove-bench --bin paid -- [seconds] [calls] [only]`
//! Runs the embedded default (SQLite, in-process queue) and PostgreSQL + Redis (one worker, then
//! three); `only` (`embedded`, `postgres`, `postgres3`) runs one of them alone, for profiling.
//! CPU per call counts this process (load generator, fakes and service alike) and, on
//! PostgreSQL + Redis, that run's own database's backends, the PostgreSQL server's own processes and
//! Redis (`cpu::count_only`); it prints the ratio of PostgreSQL + Redis to embedded (issue 31:
//! at most 2×) and what a call asks of each server (`profile`).

use grove_bench::{
    cpu::{Servers, count_only},
    load::{self, Report, Request},
    paid::{self, PATH},
    profile::{self, Probe},
};
use grove_common::config::Config;
use grove_tests::{
    TestDb, default_env,
    facilitator::FakeFacilitator,
    llm::{FakeLlm, caller_body},
    paid::{REDIS_URL, namespace, spawn_redis_worker},
};
use std::{sync::Arc, time::Duration};
use tokio::sync::watch;

const CONNECTIONS: usize = 64;

struct Rig {
    base: String,
    _app: grove_tests::TestApp,
    _db: TestDb,
    _llm: FakeLlm,
    _facilitator: FakeFacilitator,
    _stop: watch::Sender<bool>,
    probe: Option<Probe>,
}

/// The embedded default, or PostgreSQL + Redis with `workers` worker processes' worth of
/// consumers (each with its own liveness lock, as separate processes would have).
async fn rig(postgres_and_redis: bool, workers: usize) -> Rig {
    let db = TestDb::on(if postgres_and_redis {
        "postgres"
    } else {
        "sqlite"
    })
    .await;
    // This run's servers only: the machine's PostgreSQL and Redis serve other work too.
    count_only(if postgres_and_redis {
        let name = db.url.rsplit('/').next().unwrap_or_default();
        Servers::Database(name.to_owned())
    } else {
        Servers::None
    });
    // Before the service connects, so that a statement log (`profile`) covers its connections.
    let probe = Probe::new(&db.url, postgres_and_redis.then_some(REDIS_URL)).await;
    let llm = FakeLlm::start().await;
    let facilitator = FakeFacilitator::start().await;
    let mut env = default_env();
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("LLM_BASE_URL".into(), llm.openai_base());
    env.insert("X402_FACILITATOR_URL".into(), facilitator.url().to_owned());
    env.insert("RUST_LOG".into(), "warn".into());
    // Experiments: `GROVE_BENCH_ENV` adds to the service's settings.
    env.extend(grove_bench::experiment_env());
    let (stop, stopped) = watch::channel(false);
    if postgres_and_redis {
        env.insert("REDIS_URL".into(), REDIS_URL.into());
        env.insert("QUEUE_NAMESPACE".into(), namespace());
    }
    let config = Config::from_map(&env).expect("config");
    if postgres_and_redis {
        for _ in 0..workers {
            spawn_redis_worker(
                config.clone(),
                stopped.clone(),
                std::sync::Arc::new(grove_common::clock::SystemClock),
            )
            .await;
        }
    }
    let app = grove_tests::start(config).await;
    Rig {
        base: app.addr.clone(),
        _app: app,
        _db: db,
        _llm: llm,
        _facilitator: facilitator,
        _stop: stop,
        probe,
    }
}

/// A run's label and calls, and the counters of PostgreSQL and Redis before and after it.
type Profiled = (String, usize, profile::Counters, profile::Counters);

async fn scenario(
    label: &str,
    postgres_and_redis: bool,
    workers: usize,
    secs: u64,
    calls: usize,
    profiles: &mut Vec<Profiled>,
) -> Vec<Report> {
    let r = rig(postgres_and_redis, workers).await;
    let challenge = paid::challenge(&r.base).await;
    let prepared = Arc::new(paid::bodies_and_payments(&challenge, 0, calls + 200));
    let (warm, dur) = (Duration::ZERO, Duration::from_secs(secs));
    let mut out = Vec::new();

    // Sequential: the cost of the paid machinery itself, no queueing.
    let (b, p) = (r.base.clone(), Arc::clone(&prepared));
    out.push(
        load::run_bounded(
            &format!("{label}: paid, 1 connection"),
            1,
            warm,
            dur,
            200,
            move |i| paid::paid_request(&b, &p, i),
        )
        .await,
    );
    // 64 concurrent distinct paid calls.
    let (b, p) = (r.base.clone(), Arc::clone(&prepared));
    let offset = 200;
    let before = match &r.probe {
        Some(p) => Some(p.read().await),
        None => None,
    };
    out.push(
        load::run_bounded(
            &format!("{label}: paid, {CONNECTIONS} connections"),
            CONNECTIONS,
            warm,
            dur,
            calls,
            move |i| paid::paid_request(&b, &p, i + offset),
        )
        .await,
    );
    if let (Some(probe), Some(before)) = (&r.probe, before) {
        Probe::settle().await;
        let after = probe.read().await;
        let calls = out.last().map_or(0, |r| r.requests);
        profiles.push((
            format!("{label}: paid, {CONNECTIONS} connections"),
            calls,
            before,
            after,
        ));
    }
    // Replays of completed calls: same payment, same body.
    let (b, p) = (r.base.clone(), Arc::clone(&prepared));
    out.push(
        load::run(
            &format!("{label}: replay, 1 connection"),
            1,
            Duration::from_millis(300),
            dur,
            move |i| paid::paid_request(&b, &p, i % 200),
        )
        .await,
    );
    let (b, p) = (r.base.clone(), Arc::clone(&prepared));
    out.push(
        load::run(
            &format!("{label}: replay, {CONNECTIONS} connections"),
            CONNECTIONS,
            Duration::from_millis(300),
            dur,
            move |i| paid::paid_request(&b, &p, i % 200),
        )
        .await,
    );
    out
}

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let calls: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    println!(
        "grove-bench paid: zero-latency loopback facilitator and model; load generator in-process; {secs} s or {calls} calls per scenario"
    );

    // Baseline in the same run: the sandbox path at the same concurrency.
    let base_rig = rig(false, 0).await;
    let b = base_rig.base.clone();
    let body = caller_body("diagnose_growth").to_string().into_bytes();
    let sandbox = load::run(
        &format!("sandbox, {CONNECTIONS} connections"),
        CONNECTIONS,
        Duration::from_secs(1),
        Duration::from_secs(secs),
        move |_| Request::sandbox(format!("{b}{PATH}"), body.clone()),
    )
    .await;
    let b = base_rig.base.clone();
    let body = caller_body("diagnose_growth").to_string().into_bytes();
    let sandbox_1 = load::run(
        "sandbox, 1 connection",
        1,
        Duration::from_millis(300),
        Duration::from_secs(secs),
        move |_| Request::sandbox(format!("{b}{PATH}"), body.clone()),
    )
    .await;
    drop(base_rig);

    let only = std::env::args().nth(3);
    let runs = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let mut reports = vec![sandbox, sandbox_1];
    let mut profiles = Vec::new();
    if runs("embedded") {
        reports.extend(scenario("embedded (SQLite)", false, 0, secs, calls, &mut profiles).await);
    }
    if runs("postgres") {
        reports.extend(scenario("PostgreSQL + Redis", true, 1, secs, calls, &mut profiles).await);
    }
    if runs("postgres3") {
        reports.extend(
            scenario(
                "PostgreSQL + Redis, 3 workers",
                true,
                3,
                secs,
                calls,
                &mut profiles,
            )
            .await,
        );
    }
    load::print(&reports, &reports[0]);
    load::print_cpu(&reports);
    // The distributed path's cost as a ratio to the embedded one in the same run (issue 31:
    // at most 2×); absolute CPU differs by machine, the ratio much less.
    let total = |label: &str| {
        reports
            .iter()
            .find(|r| r.name == label)
            .map(|r| r.cpu.total() as f64 / r.requests.max(1) as f64)
    };
    let embedded = total(&format!(
        "embedded (SQLite): paid, {CONNECTIONS} connections"
    ));
    for label in ["PostgreSQL + Redis", "PostgreSQL + Redis, 3 workers"] {
        if let (Some(e), Some(d)) = (
            embedded,
            total(&format!("{label}: paid, {CONNECTIONS} connections")),
        ) {
            println!(
                "{label}: paid, {CONNECTIONS} connections: total CPU per call {d:.0} µs, {:.2}× embedded's {e:.0} µs",
                d / e.max(1.0)
            );
        }
    }
    for (label, calls, before, after) in &profiles {
        profile::print(label, *calls, before, after);
    }
    let seq = |label: &str| {
        reports
            .iter()
            .find(|r| r.name == label)
            .map(|r| (r.p50_us, r.p99_us))
    };
    let (s50, s99) = seq("sandbox, 1 connection").unwrap_or_default();
    for label in [
        "embedded (SQLite): paid, 1 connection",
        "PostgreSQL + Redis: paid, 1 connection",
    ] {
        let Some((p50, p99)) = seq(label) else {
            continue;
        };
        println!(
            "{label}: overhead over the sandbox p50 {:.2} ms, p99 {:.2} ms",
            (p50.saturating_sub(s50)) as f64 / 1000.0,
            (p99.saturating_sub(s99)) as f64 / 1000.0
        );
    }
}
