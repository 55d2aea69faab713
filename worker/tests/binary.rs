//! The worker binary starts, connects to Redis, reports ready, and exits 0 on SIGTERM.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::mpsc,
    time::Duration,
};

fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Waits for a line containing `needle` on the child's stdout, up to `limit`.
fn wait_for_line(child: &mut std::process::Child, needle: &str, limit: Duration) -> bool {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let needle = needle.to_owned();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains(&needle) {
                let _ = tx.send(());
                return;
            }
        }
    });
    rx.recv_timeout(limit).is_ok()
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn worker_connects_and_stops_cleanly_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_worker"))
        .env("REDIS_URL", redis_url())
        .env("RUST_LOG", "info")
        .env("LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .spawn()
        .expect("worker starts");
    assert!(
        wait_for_line(&mut child, "ready", Duration::from_secs(20)),
        "worker never reported ready"
    );
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success());
    let status =
        wait_exit(&mut child, Duration::from_secs(20)).expect("worker exits after SIGTERM");
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn worker_without_a_queue_explains_itself_and_fails() {
    let out = Command::new(env!("CARGO_BIN_EXE_worker"))
        .env_remove("REDIS_URL")
        .env("LOG_FORMAT", "json")
        .output()
        .expect("worker runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("REDIS_URL"));
}
