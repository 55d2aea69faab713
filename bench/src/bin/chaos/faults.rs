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

#[allow(clippy::too_many_arguments)]
pub async fn inject(
    fault: Fault,
    args: &Args,
    t0: Instant,
    procs: Arc<Mutex<Procs>>,
    redis: Arc<tokio::sync::Mutex<Redis>>,
    pg: Option<Arc<grove_tests::private_pg::PrivatePostgres>>,
    ends: Arc<Mutex<Vec<Instant>>>,
    client: &reqwest::Client,
    base: &str,
    stopped: tokio::sync::watch::Receiver<bool>,
) {
    let fault_at = t0 + args.spread / 3;
    let done = || *stopped.borrow();
    match fault {
        Fault::None | Fault::Facilitator => {}
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
