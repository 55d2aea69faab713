//! A PostgreSQL server of a test's own, on a free port with its own data directory: a test may
//! stop and start it (a restart, a failover) without touching the shared server on 5432 that
//! other tests use. Built with the distribution's `initdb` and `pg_ctl`
//! (`/usr/lib/postgresql/*/bin`, installed with the test services); as root they run as the
//! `postgres` user, which they require.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
};

pub struct PrivatePostgres {
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
}

/// The newest server binaries installed.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/services installs it)")
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("pg_ctl").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found
        .pop()
        .expect("initdb and pg_ctl under /usr/lib/postgresql/*/bin")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl PrivatePostgres {
    /// A new cluster (trust authentication, no fsync: a test's data need not survive a power
    /// loss, only a restart), started.
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("grove-pg-{}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).expect("data directory");
        let pg = Self {
            port: crate::free_port(),
            dir,
            bin: bin_dir(),
        };
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&pg.dir)
                .status()
                .expect("chown");
            assert!(status.success(), "chown the data directory");
        }
        pg.run(
            "initdb",
            &[
                "-D",
                &pg.data(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        pg.up();
        pg
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Runs one of the server's programs (as `postgres` when we are root), quietly; panics
    /// with its output if it fails.
    fn run(&self, program: &str, args: &[&str]) {
        let exe = self.bin.join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server and waits until it accepts connections.
    pub fn up(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server at once, as a crash or a failover does: every connection is dropped,
    /// nothing is waited for.
    pub fn down(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    /// The admin URL (database `postgres`).
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub async fn database(&self, name: &str) -> String {
        use sea_orm::ConnectionTrait;
        let admin = grove_common::db::connect_url(&self.admin_url())
            .await
            .expect("private PostgreSQL");
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create database");
        let _ = admin.close().await;
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let exe = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "stop"];
        let _ = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
