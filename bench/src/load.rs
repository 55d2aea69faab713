//! A small closed-loop load generator: N connections, each a task with its own client (one
//! keep-alive connection), sending requests back to back for a fixed time.

use std::time::{Duration, Instant};

pub struct Request {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<Vec<u8>>,
    pub expect_status: u16,
}

impl Request {
    /// A sandbox POST of `body` to `url`: the free baseline every benchmark runs beside.
    pub fn sandbox(url: String, body: Vec<u8>) -> Self {
        Self {
            method: reqwest::Method::POST,
            url,
            headers: vec![
                ("content-type", "application/json".into()),
                ("x-grove-sandbox", "1".into()),
            ],
            body: Some(body),
            expect_status: 200,
        }
    }
}

pub struct Report {
    pub name: String,
    pub requests: usize,
    pub errors: usize,
    pub elapsed: Duration,
    pub p50_us: u64,
    pub p99_us: u64,
    /// CPU time spent during the measured time (`crate::cpu::Usage`).
    pub cpu: crate::cpu::Usage,
}

impl Report {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Runs `make(i)` requests on `connections` connections for `duration` after `warmup`.
pub async fn run(
    name: &str,
    connections: usize,
    warmup: Duration,
    duration: Duration,
    make: impl Fn(usize) -> Request + Send + Sync + Clone + 'static,
) -> Report {
    run_bounded(name, connections, warmup, duration, usize::MAX, make).await
}

/// As `run`, but stops after request number `max_requests` (for requests that can be sent once).
pub async fn run_bounded(
    name: &str,
    connections: usize,
    warmup: Duration,
    duration: Duration,
    max_requests: usize,
    make: impl Fn(usize) -> Request + Send + Sync + Clone + 'static,
) -> Report {
    // The clients are built before the clock starts: building one reads the system's root
    // certificates, a few milliseconds of CPU each that would otherwise land in the measurement.
    let clients: Vec<reqwest::Client> = (0..connections)
        .map(|_| {
            grove_common::http_client::builder()
                .no_proxy()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client")
        })
        .collect();
    let started = Instant::now();
    let start_at = started + warmup;
    let stop_at = start_at + duration;
    let cpu_at_start = tokio::spawn(async move {
        tokio::time::sleep_until(start_at.into()).await;
        crate::cpu::Usage::now()
    });
    let mut tasks = Vec::new();
    for (c, client) in clients.into_iter().enumerate() {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0usize;
            let mut i = c;
            loop {
                if i >= max_requests {
                    break;
                }
                let req = make(i);
                i += connections;
                let mut rb = client.request(req.method, &req.url);
                for (k, v) in &req.headers {
                    rb = rb.header(*k, v);
                }
                if let Some(b) = req.body {
                    rb = rb.body(b);
                }
                let t0 = Instant::now();
                let ok = match rb.send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let _ = r.bytes().await;
                        status == req.expect_status
                    }
                    Err(_) => false,
                };
                let now = Instant::now();
                if now >= stop_at {
                    break;
                }
                if now >= start_at {
                    lat.push((now - t0).as_micros() as u64);
                    if !ok {
                        errors += 1;
                    }
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        if let Ok((lat, e)) = t.await {
            all.extend(lat);
            errors += e;
        }
    }
    let cpu = crate::cpu::Usage::now().since(cpu_at_start.await.unwrap_or_default());
    all.sort_unstable();
    let measured = started.elapsed().saturating_sub(warmup).min(duration);
    Report {
        name: name.to_owned(),
        requests: all.len(),
        errors,
        elapsed: if measured.is_zero() {
            duration
        } else {
            measured
        },
        p50_us: percentile(&all, 0.50),
        p99_us: percentile(&all, 0.99),
        cpu,
    }
}

pub fn print(reports: &[Report], baseline: &Report) {
    println!(
        "{:<34} {:>10} {:>9} {:>9} {:>7} {:>8}",
        "scenario", "rps", "p50 ms", "p99 ms", "errors", "vs bare"
    );
    for r in reports {
        println!(
            "{:<34} {:>10.0} {:>9.2} {:>9.2} {:>7} {:>7.2}x",
            r.name,
            r.rps(),
            r.p50_us as f64 / 1000.0,
            r.p99_us as f64 / 1000.0,
            r.errors,
            r.rps() / baseline.rps()
        );
    }
}

/// CPU per request of each run: this process (load generator, fakes and service alike), the
/// machine's PostgreSQL and its Redis.
pub fn print_cpu(reports: &[Report]) {
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>10}",
        "CPU µs per request", "this proc", "postgres", "redis", "total"
    );
    for r in reports {
        let per = |us: u64| us as f64 / r.requests.max(1) as f64;
        let c = r.cpu;
        println!(
            "{:<34} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            r.name,
            per(c.ours),
            per(c.postgres),
            per(c.redis),
            per(c.ours + c.postgres + c.redis)
        );
    }
}
