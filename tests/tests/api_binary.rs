//! The api binary: serves on its configured address, stops cleanly on SIGTERM, and refuses to
//! start in production with development defaults. It runs the built `target/*/api` (scripts/test
//! builds the binaries first).

use std::{
    net::TcpListener,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use grove_tests::free_port;

fn api() -> Command {
    let mut api = Command::new(grove_tests::binary("api"));
    // Tests run side by side: the admin listener on a port of its own.
    api.env("ADMIN_ADDR", "127.0.0.1:0");
    api
}

#[test]
fn api_serves_and_stops_cleanly_on_sigterm() {
    let port = free_port();
    let mut child = api()
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("DATABASE_URL", "sqlite::memory:")
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .spawn()
        .expect("api starts");
    // Wait for the port to accept a health check (a condition, not a fixed sleep).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut healthy = false;
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                healthy = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(healthy, "api never answered /healthz");
    sigterm(&child);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.expect("exits after SIGTERM").success());
}

#[test]
fn production_refuses_development_defaults() {
    let out = api()
        .env("APP_ENV", "production")
        .env("BIND_ADDR", "127.0.0.1:0")
        .env_remove("X402_FACILITATOR_URL")
        .output()
        .expect("api runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("X402_FACILITATOR_URL"), "{stderr}");
}

#[test]
fn production_refuses_the_testnet_in_one_line_naming_the_fix() {
    // Production in every other respect, so that the testnet is what is refused.
    let out = api()
        .env("APP_ENV", "production")
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("X402_NETWORK", "base-sepolia")
        .env("X402_FACILITATOR_URL", "https://x402.org/facilitator")
        .env("SMS_PROVIDER", "twilio")
        .env("TWILIO_ACCOUNT_SID", "AC00000000000000000000000000000000")
        .env("TWILIO_AUTH_TOKEN", "token")
        .env("TWILIO_FROM", "+15550100")
        .env_remove("X402_ALLOW_TESTNET")
        .output()
        .expect("api runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("X402_NETWORK"))
        .unwrap_or_else(|| panic!("no line names X402_NETWORK: {stderr}"));
    assert!(line.contains("X402_ALLOW_TESTNET=true"), "{line}");
}

/// A loopback OTLP/HTTP collector that counts trace exports.
fn start_collector() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let posts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&posts);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            if request_line.starts_with("POST /v1/traces") && !body.is_empty() {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let mut stream = reader.into_inner();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (port, posts)
}

#[test]
fn traces_are_exported_over_otlp_and_flushed_at_shutdown() {
    let (collector, posts) = start_collector();
    let port = free_port();
    let mut child = api()
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("DATABASE_URL", "sqlite::memory:")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{collector}"),
        )
        .env("RUST_LOG", "info")
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .spawn()
        .expect("api starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answered = false;
    while Instant::now() < deadline && !answered {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ =
                s.write_all(b"GET /api/v1/agents HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            answered = buf.starts_with("HTTP/1.1 200");
        }
        if !answered {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert!(answered, "api never answered");
    sigterm(&child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    assert!(
        posts.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "no OTLP trace export reached the collector"
    );
}

/// Sends SIGTERM, the way a process manager stops the service.
fn sigterm(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}
