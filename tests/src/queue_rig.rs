//! The queue-fault rig: a private redis-server per test (faults must not reach the shared Redis
//! other tests use), the API pushing to it, and a `worker` process serving its health.

use crate::{
    free_port,
    llm::caller_body,
    paid::{Options, PaidApp, spawn_paid},
    wait_until,
};
use serde_json::Value;
use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const PATH: &str = "/api/v1/agents/mary/call";

/// A redis-server of this test's own.
pub struct PrivateRedis {
    port: u16,
    dir: PathBuf,
    persist: bool,
    child: Option<Child>,
}

impl PrivateRedis {
    /// Starts on a free port; `persist` keeps every write in an append-only file, so that a
    /// restart comes back with its data.
    pub async fn start(persist: bool) -> Self {
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

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub async fn launch(&mut self) {
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
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port (with its data when persistent).
    pub async fn restart(&mut self) {
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

pub async fn ping(url: &str) -> redis::RedisResult<String> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    redis::cmd("PING").query_async(&mut conn).await
}

/// A coaching request unlike any before it: the sample caller's message (whose figures the
/// fake model's answer traces to) signed with a fresh name, and no digits added.
pub fn new_question() -> Value {
    let mut body = caller_body("diagnose_growth");
    let name: String = (0..12)
        .map(|_| char::from(b'a' + rand::random_range(0..26u8)))
        .collect();
    let message = body["messages"][0]["content"].as_str().unwrap_or_default();
    body["messages"][0]["content"] = format!("{message} Thanks, {name}.").into();
    body
}

pub struct Rig {
    pub paid: PaidApp,
    pub redis: PrivateRedis,
    pub worker: Child,
    /// The worker's health endpoint, `http://…`.
    pub health: String,
    pub http: reqwest::Client,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.worker.kill();
        let _ = self.worker.wait();
    }
}

/// The API (pushing to a private Redis) and one `worker` process serving its health.
pub async fn rig(persist: bool, recovery_limit_s: u64) -> Rig {
    let redis = PrivateRedis::start(persist).await;
    let paid = spawn_paid(Options {
        redis_workers: 0,
        deadline_s: 40,
        extra_env: vec![
            ("REDIS_URL".into(), redis.url()),
            ("QUEUE_NAMESPACE".into(), crate::paid::namespace()),
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
        http: grove_common::http_client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("client"),
    };
    wait_until("the worker's consumers to run", async || rig.ready().await).await;
    rig
}

impl Rig {
    /// Waits for the worker process to exit (`what` names why it should), and its status.
    pub async fn exited(&mut self, what: &str) -> std::process::ExitStatus {
        let mut status = None;
        wait_until(what, async || {
            status = self.worker.try_wait().expect("wait");
            status.is_some()
        })
        .await;
        status.expect("exited")
    }

    /// The worker's `/readyz`: every consumer registered and heartbeating.
    pub async fn ready(&self) -> bool {
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
    pub async fn restarts(&self) -> u64 {
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
    pub async fn api_ready(&self) -> bool {
        self.paid.app.get("/readyz").await.status() == 200
    }

    pub fn worker_running(&mut self) -> bool {
        matches!(self.worker.try_wait(), Ok(None))
    }

    /// One paid coaching call (a new question each time, so never a replay), answered within
    /// `bound`.
    pub async fn paid_call(&self, bound: Duration) -> Value {
        let response =
            tokio::time::timeout(bound, self.paid.pay_and_call(PATH, &new_question(), None))
                .await
                .expect("the paid call is answered in time");
        assert_eq!(response.status(), 200);
        response.json().await.expect("json")
    }

    /// After a fault: the worker and the API are ready again and a new call completes. Returns
    /// (Redis answering → worker ready, Redis answering → a new call's result).
    pub async fn recovers(&mut self, answering_since: Instant) -> (Duration, Duration) {
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

/// A worker's own `/readyz`.
pub async fn worker_ready(http: &reqwest::Client, health: &str) -> bool {
    match http.get(format!("http://{health}/readyz")).send().await {
        Ok(r) => r.status() == 200,
        Err(_) => false,
    }
}
