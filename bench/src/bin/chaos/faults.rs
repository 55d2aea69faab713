//! The fault injector: one task per scenario, noting when each fault ended.

use crate::{
    Args, Fault, KILL_EVERY, WORKERS,
    client::Rng,
    procs::{Procs, Redis, lock, sigterm, wait_healthy},
};
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// What a fault acts on.
pub struct Targets {
    pub procs: Arc<Mutex<Procs>>,
    pub redis: Arc<tokio::sync::Mutex<Redis>>,
    /// The model's address (the recording proxy in front of it).
    pub model: Arc<grove_tests::Switchable>,
    /// The private PostgreSQL of the scenarios that restart it.
    pub pg: Option<Arc<grove_tests::private_pg::PrivatePostgres>>,
}

#[allow(clippy::too_many_arguments)]
pub async fn inject(
    fault: Fault,
    args: &Args,
    t0: Instant,
    targets: Targets,
    ends: Arc<Mutex<Vec<Instant>>>,
    timeline: Arc<Mutex<Vec<String>>>,
    client: &reqwest::Client,
    base: &str,
    stopped: tokio::sync::watch::Receiver<bool>,
) {
    let Targets {
        procs,
        redis,
        model,
        pg,
    } = targets;
    let fault_at = t0 + args.spread / 3;
    let done = || *stopped.borrow();
    match fault {
        Fault::None | Fault::Facilitator | Fault::RpcLag(_) => {}
        Fault::WorkerKills => {
            // Kill one worker every 3 s (round robin: always the longest-lived one; or at random)
            // while calls arrive and a while after.
            let until = t0 + args.spread + Duration::from_secs(10);
            let mut rng = Rng(0x2545_f491_4f6c_dd1d);
            let mut k = 0;
            let mut next = t0 + KILL_EVERY;
            while next < until && !done() {
                tokio::time::sleep_until(next.into()).await;
                let victim = if args.random_kills {
                    rng.percent() as usize % WORKERS
                } else {
                    k % WORKERS
                };
                {
                    let mut p = lock(&procs);
                    p.kill_worker(victim);
                    p.start_worker(victim);
                }
                lock(&ends).push(Instant::now());
                k += 1;
                next += KILL_EVERY;
            }
        }
        Fault::RedisPause(ms) => {
            tokio::time::sleep_until(fault_at.into()).await;
            let r = redis.lock().await;
            let ms_s = ms.to_string();
            let answer = r.cli(&["CLIENT", "PAUSE", &ms_s, "ALL"]);
            let started = Instant::now();
            if answer != "OK" {
                eprintln!("CLIENT PAUSE answered {answer:?}");
            }
            lock(&ends).push(started + Duration::from_millis(ms));
        }
        Fault::RedisRestart { .. } => {
            tokio::time::sleep_until(fault_at.into()).await;
            let mut r = redis.lock().await;
            r.kill();
            tokio::time::sleep(Duration::from_secs(1)).await;
            r.spawn();
            r.wait_ready().await;
            lock(&ends).push(Instant::now());
        }
        Fault::ModelDown(secs) => {
            tokio::time::sleep_until(fault_at.into()).await;
            model.down().await;
            let down_at = Instant::now();
            let note = |what: &str, at: Instant, since: Instant, from: &str| {
                format!("{what} {:.1} s after {from}", (at - since).as_secs_f64())
            };
            let back_at = down_at + Duration::from_secs(secs);
            if let Some(at) = gate_becomes(client, base, false, back_at).await {
                lock(&timeline).push(note("gate open", at, down_at, "the model went down"));
            }
            tokio::time::sleep_until(back_at.into()).await;
            model.up().await;
            let back = Instant::now();
            lock(&ends).push(back);
            let bound = back + Duration::from_secs(120);
            match gate_becomes(client, base, true, bound).await {
                Some(at) => lock(&timeline).push(note("closed", at, back, "it came back")),
                None => lock(&timeline).push("the gate did not close within 120 s".into()),
            }
        }
        Fault::PostgresRestart => {
            tokio::time::sleep_until(fault_at.into()).await;
            let Some(pg) = pg else { return };
            // A managed database's failover: every connection dropped, back 3 s later.
            let pg2 = Arc::clone(&pg);
            tokio::task::spawn_blocking(move || pg2.down())
                .await
                .expect("pg_ctl stop");
            tokio::time::sleep(Duration::from_secs(3)).await;
            tokio::task::spawn_blocking(move || pg.up())
                .await
                .expect("pg_ctl start");
            lock(&ends).push(Instant::now());
        }
        Fault::ApiTerm => {
            tokio::time::sleep_until(fault_at.into()).await;
            {
                let mut p = lock(&procs);
                p.api_restarting = true;
                if let Some(c) = &p.api {
                    sigterm(c);
                }
            }
            // Graceful shutdown gets 30 s, then SIGKILL; then the same port again.
            let until = Instant::now() + Duration::from_secs(30);
            loop {
                let restarted = {
                    let mut p = lock(&procs);
                    let exited = p
                        .api
                        .as_mut()
                        .is_none_or(|c| c.try_wait().ok().flatten().is_some());
                    let late = Instant::now() >= until;
                    if !exited
                        && late
                        && let Some(mut c) = p.api.take()
                    {
                        let _ = c.kill();
                        let _ = c.wait();
                        p.exits.push("api: killed after 30 s of SIGTERM".into());
                    }
                    if exited || late {
                        p.start_api();
                    }
                    exited || late
                };
                if restarted {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            wait_healthy(client, base).await;
            lock(&procs).api_restarting = false;
            lock(&ends).push(Instant::now());
        }
    }
}

/// Polls the api's `/readyz` until the model's gate admits (`closed: true`) or not, or `until`;
/// when it was first seen so.
async fn gate_becomes(
    client: &reqwest::Client,
    base: &str,
    closed: bool,
    until: Instant,
) -> Option<Instant> {
    while Instant::now() < until {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && let Ok(body) = r.json::<serde_json::Value>().await
        {
            let admits = body["gates"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|g| {
                    g["provider"]
                        .as_str()
                        .is_some_and(|p| p.starts_with("model:"))
                })
                .all(|g| g["state"] == "closed");
            if admits == closed {
                return Some(Instant::now());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}
