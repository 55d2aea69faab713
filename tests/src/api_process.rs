//! The `api` binary as a separate process, its output (log lines on stdout) captured: for tests of what the real
//! program writes, such as secrets that must never reach a log line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

pub struct ApiProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The admin listener's `http://127.0.0.1:<port>` (`ADMIN_ADDR`), unless it is off.
    pub admin_url: Option<String>,
    log: Arc<Mutex<String>>,
}

impl Drop for ApiProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ApiProcess {
    /// Starts `api` with exactly `env` (plus `PATH`) and JSON logs, and waits for its
    /// `listening` line.
    pub async fn start(env: &[(String, String)]) -> Self {
        Self::start_binary(&crate::binary("api"), env).await
    }

    /// As `start`, with the `api` binary at `path` (a benchmark runs the release build).
    pub async fn start_binary(path: &std::path::Path, env: &[(String, String)]) -> Self {
        let mut child = Command::new(path)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("LOG_FORMAT", "json")
            // Processes run side by side: an admin listener on a port of its own unless `env`
            // says otherwise.
            .env("ADMIN_ADDR", "127.0.0.1:0")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the api starts");
        // Log lines go to stdout, start-up failures to stderr: both are kept.
        let log = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        collect(out, Arc::clone(&log));
        collect(err, Arc::clone(&log));
        let mut process = Self {
            child,
            url: String::new(),
            admin_url: None,
            log,
        };
        // Bounded like `wait_until`, with the log in the message when it never comes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let (addr, admin) = loop {
            let found = process.log().lines().find_map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).ok()?;
                let addr = (v["message"] == "listening").then(|| v["addr"].as_str())??;
                let admin = v["admin"].as_str().filter(|a| *a != "off");
                Some((addr.to_owned(), admin.map(str::to_owned)))
            });
            if let Some(found) = found {
                break found;
            }
            let exited = process.child.try_wait().ok().flatten();
            assert!(
                exited.is_none() && std::time::Instant::now() < deadline,
                "the api did not start ({exited:?}):\n{}",
                process.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        process.url = format!("http://{addr}");
        process.admin_url = admin.map(|a| format!("http://{a}"));
        process
    }

    /// The process id (benchmarks read its CPU time and memory from /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything logged so far.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Appends every line `from` writes to `log`, until it closes.
fn collect(from: impl std::io::Read + Send + 'static, log: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
            log.push_str(&line);
            log.push('\n');
        }
    });
}
