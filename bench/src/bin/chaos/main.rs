//! Chaos: the distributed mode (the `api` binary, 3 `worker` processes, a private Redis,
//! PostgreSQL) under faults, with retrying paid clients; prints one Markdown row per scenario.
//!
//! `cargo run --release -p grove-bench --bin chaos -- [--calls N] [--reviews N] [--model-ms MS]
//!  [--twilio-ms MS] [--spread-s S] [--bound-s S] [--deadline-s S] [--sweep-s S] [--only name,name]
//!  [--kill-order round-robin|random]`
//!
//! Needs PostgreSQL on 127.0.0.1:5432 (trust; a fresh database per scenario; the PostgreSQL
//! restart scenario starts a private server with `initdb`/`pg_ctl` instead), `redis-server`
//! and `redis-cli` on PATH (a private server per scenario on a free port with its own directory,
//! so pausing or killing it disturbs nobody), and the `api` and `worker` binaries in
//! `GROVE_BIN_DIR` or next to this program. The facilitator, model and Twilio are the
//! in-process fakes of grove-tests; the model is reached through a recording proxy that stamps
//! each request with its call. Process logs stay in the directory printed at the start.
//!
//! Counting: every facilitator script used here moves the money on the first `/settle` of an
//! authorization, so an authorization seen by the facilitator is a transfer (checked against
//! the fake chain's total). Each client signs one authorization and retries the identical
//! request (same body, same payment header) on 409, 5xx, 504 and transport errors.
//! "Delivered" is a coaching call answered 200 or a review request whose text reached Twilio;
//! "money taken without a result" is a transfer for a call never answered 200 or a review
//! request never texted. "Jobs flow again" runs from the end of each fault (the pause over,
//! Redis answering PING again, the api healthy again) to the next model request, worst over the
//! scenario; under worker kills, where the other workers keep going, it is the longest time from
//! a re-run call's first model request to its result.
//!
//! "Model down for 30 s under load": the model's address refuses connections for 30 s, a third
//! into the arrivals. There every client asks for its own price first, as an x402 client does,
//! and waits out a `503 model_unavailable` by its `Retry-After`; the notes give the gate's
//! timeline as `/readyz` showed it and the unpaid requests refused. In every scenario, a paid
//! call whose client gave up without a 200 but whose receipt shows the result by the end of a
//! 60 s drain counts as delivered, not as money taken without a result (the service finishes
//! paid work by itself, e.g. re-runs calls that failed in a model outage once its gate closes).
//!
//! Modules: `procs` (Redis, api, workers, supervisor), `model` (recording proxy), `client`
//! (retrying clients), `faults` (the injector), `run` (one scenario), `count` (its row).

mod client;
mod count;
mod faults;
mod model;
mod procs;
mod run;

use count::Row;
use std::{fmt::Write as _, time::Duration};

pub const CALL_PATH: &str = "/api/v1/agents/mary/call";
pub const REVIEW_PATH: &str = "/api/v1/actions/review-request/call";
pub const WORKERS: usize = 3;
/// The api's facilitator timeout; a "late" answer comes 2 s after it.
pub const FACILITATOR_TIMEOUT_S: u64 = 5;
pub const KILL_EVERY: Duration = Duration::from_secs(3);

#[derive(Clone)]
pub struct Args {
    pub calls: usize,
    pub reviews: usize,
    pub model: Duration,
    /// How long Twilio takes to answer a send (it has the text at once): kills land mid-send.
    pub twilio: Duration,
    /// Clients start spread evenly over this window.
    pub spread: Duration,
    /// A client gives up this long after its first attempt.
    pub bound: Duration,
    pub deadline_s: u64,
    pub sweep_s: u64,
    pub only: Option<Vec<String>>,
    /// Worker kills pick their victim at random instead of round robin.
    pub random_kills: bool,
}

impl Args {
    fn parse() -> Self {
        let mut a = Args {
            calls: 200,
            reviews: 20,
            model: Duration::from_secs(2),
            twilio: Duration::ZERO,
            spread: Duration::from_secs(20),
            bound: Duration::from_secs(150),
            deadline_s: 20,
            sweep_s: 5,
            only: None,
            random_kills: false,
        };
        let argv: Vec<String> = std::env::args().skip(1).collect();
        for pair in argv.chunks(2) {
            let (flag, value) = (pair[0].as_str(), pair.get(1).map_or("", String::as_str));
            let n = || -> u64 {
                value.parse().unwrap_or_else(|_| {
                    eprintln!("{flag} needs a number, got {value:?}");
                    std::process::exit(2)
                })
            };
            match flag {
                "--calls" => a.calls = n() as usize,
                "--reviews" => a.reviews = n() as usize,
                "--model-ms" => a.model = Duration::from_millis(n()),
                "--twilio-ms" => a.twilio = Duration::from_millis(n()),
                "--spread-s" => a.spread = Duration::from_secs(n()),
                "--bound-s" => a.bound = Duration::from_secs(n()),
                "--deadline-s" => a.deadline_s = n(),
                "--sweep-s" => a.sweep_s = n(),
                "--only" => a.only = Some(value.split(',').map(str::to_owned).collect()),
                "--kill-order" => a.random_kills = value == "random",
                _ => {
                    eprintln!("unknown flag {flag}; see the header of bench/src/bin/chaos.rs");
                    std::process::exit(2)
                }
            }
        }
        a
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Fault {
    None,
    WorkerKills,
    RedisPause(u64),
    RedisRestart {
        persist: bool,
    },
    Facilitator,
    /// The facilitator's faults, with the chain endpoint (`BASE_RPC_URL`) this many seconds
    /// behind the chain: unknown outcomes are decided only once it shows them (issue 25).
    RpcLag(u64),
    ApiTerm,
    /// The model's address refuses connections for this many seconds.
    ModelDown(u64),
    /// PostgreSQL (a private server) stopped at once and started 3 s later, with nothing to
    /// restart a process that exits (issue 27).
    PostgresRestart,
}

const SCENARIOS: &[(&str, Fault)] = &[
    ("baseline", Fault::None),
    ("worker SIGKILL every 3 s", Fault::WorkerKills),
    ("Redis CLIENT PAUSE 2 s", Fault::RedisPause(2000)),
    ("Redis CLIENT PAUSE 7 s", Fault::RedisPause(7000)),
    (
        "Redis restart, no persistence",
        Fault::RedisRestart { persist: false },
    ),
    (
        "Redis restart, AOF everysec",
        Fault::RedisRestart { persist: true },
    ),
    (
        "facilitator 20 % 5xx after settling, 5 % late",
        Fault::Facilitator,
    ),
    (
        "RPC lagging 30 s, facilitator 20 % 5xx after settling, 5 % late",
        Fault::RpcLag(30),
    ),
    ("api SIGTERM + restart", Fault::ApiTerm),
    ("model down for 30 s under load", Fault::ModelDown(30)),
    ("PostgreSQL restart, no supervisor", Fault::PostgresRestart),
];

fn print_table(rows: &[Row], args: &Args) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} paid coaching calls + {} paid review requests per scenario, clients starting over {} s and retrying for up to {} s; model {} ms; Twilio answers in {} ms; CALL_DEADLINE_S={}, SWEEP_INTERVAL_S={}; 1 api, {WORKERS} workers, private Redis, PostgreSQL.\n",
        args.calls,
        args.reviews,
        args.spread.as_secs(),
        args.bound.as_secs(),
        args.model.as_millis(),
        args.twilio.as_millis(),
        args.deadline_s,
        args.sweep_s
    );
    let _ = writeln!(
        t,
        "| scenario | requests | delivered results | transfers | transfers / request (max) | model calls / paid call (mean) | (max) | texts / review (max) | money taken without a result | jobs flow again after the fault (s) | slowest call (s) | wall (s) |"
    );
    let _ = writeln!(
        t,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {:.0} |",
            r.name,
            r.requests,
            r.delivered,
            r.transfers,
            r.transfers_per_request_max,
            r.model_mean,
            r.model_max,
            r.texts_max,
            r.taken_without_result,
            r.recovery,
            r.slowest
                .map_or("–".into(), |d| format!("{:.1}", d.as_secs_f64())),
            r.wall.as_secs_f64()
        );
    }
    let _ = writeln!(t);
    for r in rows {
        let _ = writeln!(t, "- {}: {}", r.name, r.notes);
    }
    t
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let logs = std::env::temp_dir().join(format!("grove-chaos-{}", std::process::id()));
    // A private copy: others may rebuild target/ while a scenario restarts processes.
    let bins = logs.join("bin");
    std::fs::create_dir_all(&bins).expect("log directory");
    let built = procs::bin_dir();
    for bin in ["api", "worker"] {
        std::fs::copy(built.join(bin), bins.join(bin)).expect("copy the binaries");
    }
    eprintln!(
        "grove-bench chaos: binaries from {}, logs in {}",
        bins.display(),
        logs.display()
    );
    let mut rows = Vec::new();
    for (name, fault) in SCENARIOS {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|w| name.contains(w.as_str())))
        {
            continue;
        }
        eprintln!("[{name}] running");
        let row = run::scenario(&args, name, *fault, &bins, &logs).await;
        eprintln!(
            "[{name}] {} requests, {} delivered, {} taken without a result, recovery {}, {:.0} s",
            row.requests,
            row.delivered,
            row.taken_without_result,
            row.recovery,
            row.wall.as_secs_f64()
        );
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&bins);
    print!("{}", print_table(&rows, &args));
}
