//! Redis faults under running `worker` processes (issue 8). A restart of Redis (with or
//! without its data) and a pause longer than the response timeout leave the consumers taking
//! jobs again without anyone restarting the worker; a job in flight at the fault runs once; a
//! worker that cannot get back within its limit exits non-zero for its supervisor.
//!
//! A worker killed mid-call has its call taken over by another at once, straight from the
//! database (even with Redis down); a push that fails after settlement is retried until it
//! lands; the api is not ready while no worker consumes its queues.
//!
//! Each test runs its own redis-server on a free port: faults must not reach the shared Redis
//! other tests use. Times are printed (`--nocapture`) as the measured recovery numbers.

use grove_common::db::{calls, entities::call};
use grove_tests::{
    free_port,
    llm::{Reply, caller_body},
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
};
use sea_orm::EntityTrait;
use serde_json::Value;
use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const PATH: &str = "/api/v1/agents/mary/call";

/// A redis-server of this test's own.
struct PrivateRedis {
    port: u16,
    dir: PathBuf,
    persist: bool,
    child: Option<Child>,
}

impl PrivateRedis {
    /// Starts on a free port; `persist` keeps every write in an append-only file, so that a
    /// restart comes back with its data.
    async fn start(persist: bool) -> Self {
        let dir = std::env::temp_dir().join(format!("grove-redis-{}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).expect("redis dir");
        let mut redis = Self {
            port: free_port(),
            dir,
            persist,
            child: None,
        };
        redis.launch().await;
        redis
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn launch(&mut self) {
        let port = self.port.to_string();
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &port, "--bind", "127.0.0.1", "--save", ""])
            .arg("--dir")
            .arg(&self.dir);
        if self.persist {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (it is installed with the test services)");
        self.child = Some(child);
        let url = self.url();
        wait_until("the private Redis to answer", async || {
            ping(&url).await.is_ok()
        })
        .await;
    }

    /// SIGKILL: no shutdown save, connections reset.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port (with its data when persistent).
    async fn restart(&mut self) {
        self.kill();
        self.launch().await;
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn ping(url: &str) -> redis::RedisResult<String> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    redis::cmd("PING").query_async(&mut conn).await
}

/// A coaching request unlike any before it: the sample caller's message (whose figures the
/// fake model's answer traces to) signed with a fresh name, and no digits added.
fn new_question() -> Value {
    let mut body = caller_body("diagnose_growth");
    let name: String = (0..12)
        .map(|_| char::from(b'a' + rand::random_range(0..26u8)))
        .collect();
    let message = body["messages"][0]["content"].as_str().unwrap_or_default();
    body["messages"][0]["content"] = format!("{message} Thanks, {name}.").into();
    body
}

struct Rig {
    paid: PaidApp,
    redis: PrivateRedis,
    worker: Child,
    health: String,
    http: reqwest::Client,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.worker.kill();
        let _ = self.worker.wait();
    }
}

/// The API (pushing to a private Redis) and one `worker` process serving its health.
async fn rig(persist: bool, recovery_limit_s: u64) -> Rig {
    let redis = PrivateRedis::start(persist).await;
    let paid = spawn_paid(Options {
        redis_workers: 0,
        deadline_s: 40,
        extra_env: vec![
            ("REDIS_URL".into(), redis.url()),
            ("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()),
        ],
        ..Default::default()
    })
    .await;
    let health = format!("127.0.0.1:{}", free_port());
    let worker = paid.start_worker_process_with(&[
        ("WORKER_HEALTH_ADDR", &health),
        ("QUEUE_RECOVERY_LIMIT_S", &recovery_limit_s.to_string()),
    ]);
    let rig = Rig {
        paid,
        redis,
        worker,
        health: format!("http://{health}"),
        http: reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("client"),
    };
    wait_until("the worker's consumers to run", async || rig.ready().await).await;
    rig
}

impl Rig {
    /// The worker's `/readyz`: every consumer registered and heartbeating.
    async fn ready(&self) -> bool {
        match self
            .http
            .get(format!("{}/readyz", self.health))
            .send()
            .await
        {
            Ok(r) => r.status() == 200,
            Err(_) => false,
        }
    }

    /// Consumers rebuilt after an error, summed over both queues (`/metrics`).
    async fn restarts(&self) -> u64 {
        let Ok(r) = self
            .http
            .get(format!("{}/metrics", self.health))
            .send()
            .await
        else {
            return 0;
        };
        let text = r.text().await.unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with("grove_worker_consumer_restarts_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// The API's `/readyz` (its own Redis connection is back too).
    async fn api_ready(&self) -> bool {
        self.paid.app.get("/readyz").await.status() == 200
    }

    fn worker_running(&mut self) -> bool {
        matches!(self.worker.try_wait(), Ok(None))
    }

    /// One paid coaching call (a new question each time, so never a replay), answered within
    /// `bound`.
    async fn paid_call(&self, bound: Duration) -> Value {
        let response =
            tokio::time::timeout(bound, self.paid.pay_and_call(PATH, &new_question(), None))
                .await
                .expect("the paid call is answered in time");
        assert_eq!(response.status(), 200);
        response.json().await.expect("json")
    }

    /// After a fault: the worker and the API are ready again and a new call completes. Returns
    /// (Redis answering → worker ready, Redis answering → a new call's result).
    async fn recovers(&mut self, answering_since: Instant) -> (Duration, Duration) {
        wait_until("both consumers to notice the fault", async || {
            self.restarts().await >= 2
        })
        .await;
        wait_until("the worker's consumers to run again", async || {
            self.ready().await
        })
        .await;
        let ready_after = answering_since.elapsed();
        wait_until("the API's queue connection", async || {
            self.api_ready().await
        })
        .await;
        let envelope = self.paid_call(Duration::from_secs(20)).await;
        assert_eq!(envelope["mode"], "diagnose_growth");
        assert!(
            self.worker_running(),
            "the worker never had to be restarted"
        );
        (ready_after, answering_since.elapsed())
    }
}

async fn a_restart_is_survived(persist: bool) {
    let mut rig = rig(persist, 60).await;
    rig.paid_call(Duration::from_secs(20)).await;
    assert_eq!(rig.paid.llm.received(), 1);

    rig.redis.restart().await;
    let answering = Instant::now();
    let (ready, result) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    assert_eq!(rig.paid.facilitator.settle_calls(), 2);
    eprintln!(
        "redis restart (persist={persist}): worker ready {:.2}s and a new call answered {:.2}s after Redis answered",
        ready.as_secs_f64(),
        result.as_secs_f64()
    );
}

#[tokio::test]
async fn consumers_resume_after_redis_restarts_without_its_data() {
    a_restart_is_survived(false).await;
}

#[tokio::test]
async fn consumers_resume_after_redis_restarts_with_its_data() {
    a_restart_is_survived(true).await;
}

#[tokio::test]
async fn a_job_in_flight_when_redis_restarts_runs_once() {
    let mut rig = rig(true, 60).await;
    rig.paid.llm.script([Reply::Slow(Duration::from_secs(3))]);
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the model request", async || rig.paid.llm.received() == 1).await;
    rig.redis.restart().await;
    let answering = Instant::now();

    let response = tokio::time::timeout(Duration::from_secs(40), call)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    let first = answering.elapsed();
    // The job in flight finished on its own task. The old consumer's in-flight set came back
    // with the data, so the job is delivered once more when that consumer's name expires: that
    // run finds the call done, says so on the done channel, and calls no model.
    let client = redis::Client::open(rig.redis.url()).expect("client");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    let namespace = rig.paid.env["QUEUE_NAMESPACE"].clone();
    pubsub
        .subscribe(grove_common::jobs::done_channel(&namespace))
        .await
        .expect("subscribe");
    let redelivered = tokio::time::timeout(Duration::from_secs(30), async {
        use futures::StreamExt;
        pubsub.on_message().next().await
    })
    .await
    .expect("the job in flight at the fault is delivered again");
    assert!(redelivered.is_some());
    let again = answering.elapsed();
    assert_eq!(rig.paid.llm.received(), 1, "no second model call");

    let (ready, _) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    assert_eq!(rig.paid.llm.completed(), 2);
    eprintln!(
        "redis restart mid-job: the in-flight call answered {:.2}s, its redelivery ran (no model call) {:.2}s, the worker was ready {:.2}s after Redis answered",
        first.as_secs_f64(),
        again.as_secs_f64(),
        ready.as_secs_f64()
    );
}

#[tokio::test]
async fn consumers_resume_after_a_pause_longer_than_the_response_timeout() {
    let mut rig = rig(false, 60).await;
    rig.paid_call(Duration::from_secs(20)).await;

    // 7 s: longer than the 5 s response timeout of every Redis connection we make.
    let client = redis::Client::open(rig.redis.url()).expect("client");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(7000)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .expect("CLIENT PAUSE");
    let paused = Instant::now();
    // A command sent now is answered when the pause ends: that is when Redis answers again.
    let patient =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(20)));
    let mut probe = client
        .get_multiplexed_async_connection_with_config(&patient)
        .await
        .expect("probe connection");
    let _: String = tokio::time::timeout(
        Duration::from_secs(20),
        redis::cmd("PING").query_async(&mut probe),
    )
    .await
    .expect("the pause ends")
    .expect("PING");
    let answering = Instant::now();
    assert!(paused.elapsed() >= Duration::from_secs(6));

    let (ready, result) = rig.recovers(answering).await;
    assert_eq!(rig.paid.llm.received(), 2, "one model call per paid call");
    eprintln!(
        "7 s CLIENT PAUSE: worker ready {:.2}s and a new call answered {:.2}s after Redis answered",
        ready.as_secs_f64(),
        result.as_secs_f64()
    );
}

#[tokio::test]
async fn a_worker_that_cannot_get_back_to_redis_exits_non_zero() {
    let mut rig = rig(false, 2).await;
    rig.redis.kill();
    let gone = Instant::now();
    let mut status = None;
    wait_until("the worker to give up", async || {
        status = rig.worker.try_wait().expect("wait");
        status.is_some()
    })
    .await;
    let status = status.expect("exited");
    assert!(!status.success(), "exit status {status}");
    eprintln!(
        "Redis gone (limit 2 s): the worker exited with {status} after {:.2}s",
        gone.elapsed().as_secs_f64()
    );
}

/// A worker's own `/readyz`.
async fn worker_ready(http: &reqwest::Client, health: &str) -> bool {
    match http.get(format!("http://{health}/readyz")).send().await {
        Ok(r) => r.status() == 200,
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_killed_workers_jobs_spread_over_the_others_and_run_once_more() {
    const CALLS: usize = 6;
    let mut rig = rig(false, 60).await;
    let model = Duration::from_secs(4);
    rig.paid.llm.script(vec![Reply::Slow(model); CALLS * 2]);
    // The first worker takes every call (it is alone), then two more join.
    let mut calls = Vec::new();
    for _ in 0..CALLS {
        let body = new_question();
        let payment = rig
            .paid
            .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
            .await;
        calls.push(rig.paid.spawn_paid_call(PATH, &body, &payment));
    }
    wait_until("every call at the model", async || {
        rig.paid.llm.received() == CALLS
    })
    .await;
    let mut others = Vec::new();
    for _ in 0..2 {
        let health = format!("127.0.0.1:{}", free_port());
        let child = rig
            .paid
            .start_worker_process_with(&[("WORKER_HEALTH_ADDR", &health)]);
        others.push((child, health));
    }
    for (_, health) in &others {
        wait_until("another worker", async || {
            worker_ready(&rig.http, health).await
        })
        .await;
    }

    let _ = rig.worker.kill();
    let _ = rig.worker.wait();
    let killed = Instant::now();
    wait_until("the orphans back at the model", async || {
        rig.paid.llm.received() == CALLS * 2
    })
    .await;
    let rerun_after = killed.elapsed();
    // Who runs them now: the process each call's lease names. The killed worker's calls were
    // taken over (its liveness lock went with it), spread over both survivors.
    let db = grove_common::db::connect_url(&rig.paid.db.url)
        .await
        .expect("db");
    let mut by_process = std::collections::BTreeMap::<i64, usize>::new();
    for c in call::Entity::find().all(&db).await.expect("calls") {
        let holder = calls::holder(&db, c.id)
            .await
            .expect("holder")
            .expect("the call");
        *by_process
            .entry(holder.lease_process.expect("a process holds it"))
            .or_default() += 1;
    }
    let mut held: Vec<usize> = by_process.into_values().collect();
    held.sort_unstable();
    assert_eq!(held.iter().sum::<usize>(), CALLS, "{held:?}");
    assert_eq!(
        held.len(),
        2,
        "both surviving workers took orphans: {held:?}"
    );
    assert!(held[0] >= 2, "spread, not one batch: {held:?}");

    for call in calls {
        let response = tokio::time::timeout(Duration::from_secs(40), call)
            .await
            .expect("answered")
            .expect("task")
            .expect("response");
        assert_eq!(response.status(), 200);
    }
    let answered_after = killed.elapsed();
    assert_eq!(
        rig.paid.llm.completed(),
        CALLS,
        "one answer billed per call"
    );
    assert_eq!(
        rig.paid.llm.received(),
        CALLS * 2,
        "two model calls per paid call: the killed one and its re-run"
    );
    for (mut child, _) in others {
        let _ = child.kill();
        let _ = child.wait();
    }
    eprintln!(
        "worker SIGKILL with {CALLS} calls in flight: orphans spread {held:?}, re-run at the model {:.2}s and all answered {:.2}s after the kill (model {:.0}s)",
        rerun_after.as_secs_f64(),
        answered_after.as_secs_f64(),
        model.as_secs_f64()
    );
}

#[tokio::test]
async fn a_killed_workers_call_is_taken_over_by_another_worker_even_with_redis_down() {
    let mut rig = rig(false, 60).await;
    rig.paid.llm.script([Reply::Slow(Duration::from_secs(60))]);
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the model request", async || rig.paid.llm.received() == 1).await;
    let health = format!("127.0.0.1:{}", free_port());
    let mut other = rig
        .paid
        .start_worker_process_with(&[("WORKER_HEALTH_ADDR", &health)]);
    wait_until("a second worker", async || {
        worker_ready(&rig.http, &health).await
    })
    .await;

    // No queue to redeliver anything, and the worker at the model dies.
    rig.redis.kill();
    let _ = rig.worker.kill();
    let _ = rig.worker.wait();
    let killed = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("answered in time")
        .expect("task")
        .expect("response");
    let answered = killed.elapsed();
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(response.status(), 200);
    assert_eq!(rig.paid.facilitator.transfers(), 1);
    assert_eq!(
        rig.paid.llm.received(),
        2,
        "the cut model call and the re-run"
    );
    assert_eq!(rig.paid.llm.completed(), 1, "one answer billed");
    eprintln!(
        "worker SIGKILL with Redis down: the call re-ran on the other worker and was answered {:.2}s after the kill",
        answered.as_secs_f64()
    );
}

/// The api's `grove_push_retries` gauge.
async fn push_retries(rig: &Rig) -> Option<u64> {
    let text = rig.paid.app.get("/metrics").await.text().await.ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("grove_push_retries ")?.parse().ok())
}

#[tokio::test]
async fn a_push_that_fails_after_settlement_is_retried_until_it_lands() {
    // CALL_DEADLINE_S is 40 here: the recovery sweep alone would wait that long.
    let mut rig = rig(false, 60).await;
    rig.redis.kill();
    let body = new_question();
    let payment = rig
        .paid
        .payment_for(PATH, &body, grove_tests::x402::PayOptions::default())
        .await;
    let call = rig.paid.spawn_paid_call(PATH, &body, &payment);
    wait_until("the failed push to be retried", async || {
        push_retries(&rig).await == Some(1)
    })
    .await;
    assert_eq!(
        rig.paid.facilitator.transfers(),
        1,
        "settled before the push"
    );
    assert_eq!(rig.paid.llm.received(), 0);

    rig.redis.launch().await;
    let back = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("answered without a client retry")
        .expect("task")
        .expect("response");
    assert_eq!(response.status(), 200);
    let answered = back.elapsed();
    assert_eq!(rig.paid.llm.received(), 1, "one model call");
    assert_eq!(rig.paid.facilitator.transfers(), 1);
    wait_until("no push left to retry", async || {
        push_retries(&rig).await == Some(0)
    })
    .await;
    eprintln!(
        "push refused (Redis down) after settlement: answered {:.2}s after Redis came back",
        answered.as_secs_f64()
    );
}

#[tokio::test]
async fn the_api_is_not_ready_while_no_worker_consumes_its_queues() {
    let redis = PrivateRedis::start(false).await;
    let paid = spawn_paid(Options {
        extra_env: vec![
            ("REDIS_URL".into(), redis.url()),
            ("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace()),
        ],
        ..Default::default()
    })
    .await;
    let r = paid.app.get("/readyz").await;
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["checks"]["queue"], "ok", "Redis itself answers");
    assert_eq!(body["checks"]["consumers"], "none_alive");
    assert_eq!(
        body["consumers"],
        serde_json::json!({"coaching": 0, "review": 0})
    );

    let mut worker = paid.start_worker_process();
    wait_until("the api to see the worker", async || {
        paid.app.get("/readyz").await.status() == 200
    })
    .await;
    let body = paid.app.get_json("/readyz").await;
    assert_eq!(body["checks"]["consumers"], "ok");
    assert_eq!(body["consumers"]["coaching"], 1);
    assert_eq!(body["consumers"]["review"], 1);
    let metrics = paid.app.get("/metrics").await.text().await.expect("text");
    assert!(
        metrics.contains("grove_queue_consumers{queue=\"coaching\"} 1"),
        "{metrics}"
    );

    let _ = worker.kill();
    let _ = worker.wait();
    wait_until(
        "the api to see no worker once its heartbeats stop",
        async || paid.app.get("/readyz").await.status() == 503,
    )
    .await;
}

#[tokio::test]
async fn a_worker_that_loses_its_liveness_lock_exits_non_zero() {
    if grove_tests::db::backend() != "postgres" {
        // On SQLite the lock is a file lock, which lives exactly as long as the process.
        eprintln!("PostgreSQL only: GROVE_TEST_DB=postgres");
        return;
    }
    let mut rig = rig(false, 60).await;
    // The database drops the worker's lock connection (a restart, a network cut, an operator).
    let db = grove_common::db::connect_url(&rig.paid.db.url)
        .await
        .expect("db");
    use sea_orm::ConnectionTrait;
    let sql = format!(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 \
         AND classid = {} AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        grove_common::db::liveness::NAMESPACE
    );
    let ended = db
        .query_all_raw(sea_orm::Statement::from_string(
            sea_orm::DatabaseBackend::Postgres,
            sql,
        ))
        .await
        .expect("terminate the lock's connection");
    assert_eq!(ended.len(), 1, "the one worker holds one lock");
    let lost = Instant::now();
    let mut status = None;
    wait_until("the worker to stop", async || {
        status = rig.worker.try_wait().expect("wait");
        status.is_some()
    })
    .await;
    let status = status.expect("exited");
    assert!(!status.success(), "exit status {status}");
    eprintln!(
        "liveness lock connection terminated: the worker exited with {status} after {:.2}s",
        lost.elapsed().as_secs_f64()
    );
}
