//! The processes a scenario runs: a private Redis, and the api and workers under a supervisor
//! that restarts whatever exits on its own.

use std::{
    fs::File,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

pub fn log_file(path: &Path) -> (Stdio, Stdio) {
    let f = File::options()
        .create(true)
        .append(true)
        .open(path)
        .expect("log file");
    let g = f.try_clone().expect("log file");
    (Stdio::from(f), Stdio::from(g))
}

/// The directory holding `api` and `worker`: `GROVE_BIN_DIR`, else next to this program.
pub fn bin_dir() -> PathBuf {
    let dir = std::env::var_os("GROVE_BIN_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(Path::to_path_buf))
        })
        .expect("a binary directory");
    for bin in ["api", "worker"] {
        if !dir.join(bin).exists() {
            eprintln!(
                "{} is missing: build it (cargo build --bin api --bin worker) or set GROVE_BIN_DIR",
                dir.join(bin).display()
            );
            std::process::exit(2);
        }
    }
    dir
}

/// A Redis server private to one scenario.
pub struct Redis {
    port: u16,
    dir: PathBuf,
    persist: bool,
    child: Option<Child>,
}

impl Redis {
    pub fn start(dir: &Path, persist: bool) -> Self {
        let mut r = Redis {
            port: free_port(),
            dir: dir.to_path_buf(),
            persist,
            child: None,
        };
        r.spawn();
        r
    }

    pub fn spawn(&mut self) {
        let (out, err) = log_file(&self.dir.join("redis.log"));
        let aof = if self.persist { "yes" } else { "no" };
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                aof,
                "--appendfsync",
                "everysec",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("redis-server starts (is it on PATH?)");
        self.child = Some(child);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn cli(&self, args: &[&str]) -> String {
        Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }

    pub async fn wait_ready(&self) {
        let until = Instant::now() + Duration::from_secs(15);
        while self.cli(&["PING"]) != "PONG" {
            assert!(Instant::now() < until, "redis-server did not answer PING");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

pub struct Procs {
    pub bins: PathBuf,
    pub logs: PathBuf,
    pub env: Vec<(String, String)>,
    pub api: Option<Child>,
    pub workers: Vec<Option<Child>>,
    /// Set while the fault injector restarts the api itself.
    pub api_restarting: bool,
    /// Exits nobody asked for, as "name: status".
    pub exits: Vec<String>,
    /// Whether `supervise` restarts what exited (false: it only notes the exit).
    pub supervised: bool,
}

impl Procs {
    pub fn spawn(&self, bin: &str, log: &str) -> Child {
        let (out, err) = log_file(&self.logs.join(log));
        Command::new(self.bins.join(bin))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("process starts")
    }

    pub fn start_api(&mut self) {
        self.api = Some(self.spawn("api", "api.log"));
    }

    /// SIGKILL: no drain, no goodbye, whatever it was sending cut where it stood.
    pub fn kill_api(&mut self) {
        if let Some(mut c) = self.api.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn start_worker(&mut self, i: usize) {
        self.workers[i] = Some(self.spawn("worker", &format!("worker-{i}.log")));
    }

    pub fn kill_worker(&mut self, i: usize) {
        if let Some(mut c) = self.workers[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Restarts what exited by itself (a supervisor's job), noting it; without a supervisor,
    /// only notes it.
    pub fn supervise(&mut self) {
        for i in 0..self.workers.len() {
            let exited = self.workers[i].as_mut().and_then(|c| c.try_wait().ok()?);
            if let Some(status) = exited {
                self.exits.push(format!("worker-{i}: {status}"));
                self.workers[i] = None;
                if self.supervised {
                    self.start_worker(i);
                }
            }
        }
        if !self.supervised {
            let exited = self.api.as_mut().and_then(|c| c.try_wait().ok()?);
            if let Some(status) = exited {
                self.exits.push(format!("api: {status}"));
                self.api = None;
            }
            return;
        }
        if !self.api_restarting {
            let exited = self.api.as_mut().and_then(|c| c.try_wait().ok()?);
            if let Some(status) = exited {
                self.exits.push(format!("api: {status}"));
                self.start_api();
            }
        }
    }

    pub fn stop_all(&mut self) {
        for i in 0..self.workers.len() {
            self.kill_worker(i);
        }
        if let Some(mut c) = self.api.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn sigterm(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
}

pub async fn wait_healthy(client: &reqwest::Client, base: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            Instant::now() < until,
            "the api did not come up: see api.log"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
