//! Starting in production (issue 27): any number of processes may start at once on an empty
//! database (the migrator takes a lock: PostgreSQL's advisory lock, SQLite's file lock), and the
//! api listens where a platform tells it to (`PORT`), where the image's HEALTHCHECK finds it.

use grove_tests::{db::TestDb, default_env, free_port, paid::start_process, wait_until};
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use std::{collections::HashMap, process::Child, time::Duration};

struct Processes(Vec<(&'static str, Child)>);

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Processes {
    /// Fails the test with the name of a process that exited (a migration that raced and lost).
    fn all_running(&mut self) {
        for (name, child) in &mut self.0 {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{name} exited during start-up: {status}");
            }
        }
    }
}

async fn ready(http: &reqwest::Client, addr: &str) -> bool {
    match http.get(format!("http://{addr}/readyz")).send().await {
        Ok(r) => r.status() == 200,
        Err(_) => false,
    }
}

/// The test holds the migration lock itself, as a slow first migrator would.
enum HeldLock {
    Postgres(sea_orm::sqlx::PgConnection),
    File(std::fs::File, u64),
}

async fn hold_migration_lock(db: &TestDb) -> HeldLock {
    if db.url.starts_with("postgres") {
        let conn = grove_common::db::connect_url(&db.url).await.expect("db");
        let mut lock = conn
            .get_postgres_connection_pool()
            .acquire()
            .await
            .expect("connection")
            .detach();
        sea_orm::sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(grove_migrations::lock::ADVISORY_KEY)
            .execute(&mut lock)
            .await
            .expect("lock");
        HeldLock::Postgres(lock)
    } else {
        use std::os::unix::fs::MetadataExt;
        let file = grove_common::db::sqlite_file(&db.url).expect("a file");
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(format!("{file}-migrate.lock"))
            .expect("lock file");
        lock.lock().expect("flock");
        let inode = lock.metadata().expect("metadata").ino();
        HeldLock::File(lock, inode)
    }
}

/// Processes blocked on the migration lock.
async fn waiting_on(lock: &mut HeldLock) -> usize {
    match lock {
        HeldLock::Postgres(conn) => {
            let key = grove_migrations::lock::ADVISORY_KEY;
            let n: i64 = sea_orm::sqlx::query_scalar(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND objsubid = 1 AND classid = $1::bigint::oid AND objid = $2::bigint::oid \
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            )
            .bind(key >> 32)
            .bind(key & 0xffff_ffff)
            .fetch_one(conn)
            .await
            .expect("pg_locks");
            usize::try_from(n).unwrap_or(0)
        }
        // Linux lists each blocked flock in /proc/locks as "N: -> FLOCK ADVISORY WRITE pid
        // maj:min:inode 0 EOF".
        HeldLock::File(_, inode) => std::fs::read_to_string("/proc/locks")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("->"))
            .filter(|l| {
                l.split_whitespace()
                    .find(|f| f.matches(':').count() == 2)
                    .and_then(|f| f.rsplit(':').next()?.parse::<u64>().ok())
                    == Some(*inode)
            })
            .count(),
    }
}

async fn release(lock: HeldLock) {
    match lock {
        HeldLock::Postgres(conn) => {
            use sea_orm::sqlx::Connection;
            conn.close().await.expect("close");
        }
        HeldLock::File(file, _) => drop(file),
    }
}

#[tokio::test]
async fn four_processes_started_together_on_an_empty_database_all_become_ready_and_migrate_it_once()
{
    let db = TestDb::new().await;
    let mut env: HashMap<String, String> = default_env();
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("REDIS_URL".into(), grove_tests::paid::REDIS_URL.into());
    env.insert("QUEUE_NAMESPACE".into(), grove_tests::paid::namespace());
    let api = format!("127.0.0.1:{}", free_port());
    let workers: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();

    // A first migrator holds the lock: every process must wait for it, not race it.
    let mut lock = hold_migration_lock(&db).await;
    let start = |bin: &str, extra: (&str, &str)| {
        let env = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        start_process(bin, env.chain([extra]))
    };
    let mut procs = Processes(vec![("api", start("api", ("BIND_ADDR", &api)))]);
    for health in &workers {
        procs
            .0
            .push(("worker", start("worker", ("WORKER_HEALTH_ADDR", health))));
    }
    wait_until(
        "all four processes to wait on the migration lock",
        async || {
            procs.all_running();
            waiting_on(&mut lock).await == 4
        },
    )
    .await;
    release(lock).await;

    let http = grove_common::http_client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("client");
    for addr in std::iter::once(&api).chain(&workers) {
        wait_until("every process to be ready", async || {
            procs.all_running();
            ready(&http, addr).await
        })
        .await;
    }

    // The schema is complete, each migration recorded once.
    let conn = grove_common::db::connect_url(&db.url).await.expect("db");
    let backend = conn.get_database_backend();
    let rows = conn
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT version FROM seaql_migrations ORDER BY version",
        ))
        .await
        .expect("migrations table");
    let applied: Vec<String> = rows
        .iter()
        .map(|r| r.try_get::<String>("", "version").expect("version"))
        .collect();
    use grove_migrations::MigratorTrait;
    let all: Vec<String> = grove_migrations::Migrator::migrations()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    assert_eq!(applied, all, "every migration applied, each once");
    let pending = grove_migrations::Migrator::get_pending_migrations(&conn)
        .await
        .expect("pending");
    assert!(pending.is_empty());
    // And it is the whole schema: the newest table and column are there.
    let probe = if backend == DatabaseBackend::Postgres {
        "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'calls' AND column_name = 'lease_process'"
    } else {
        "SELECT count(*) AS n FROM pragma_table_info('calls') WHERE name = 'lease_process'"
    };
    let found = conn
        .query_one_raw(Statement::from_string(backend, probe))
        .await
        .expect("probe")
        .expect("a row")
        .try_get::<i64>("", "n")
        .expect("n");
    assert_eq!(found, 1);
}

#[tokio::test]
async fn the_api_listens_on_port_when_bind_addr_is_unset() {
    let db = TestDb::new().await;
    let port = free_port();
    let mut env = default_env();
    env.remove("BIND_ADDR");
    env.insert("DATABASE_URL".into(), db.url.clone());
    env.insert("PORT".into(), port.to_string());
    let env: Vec<(String, String)> = env.into_iter().collect();
    let api = grove_tests::api_process::ApiProcess::start(&env).await;
    assert_eq!(api.url, format!("http://0.0.0.0:{port}"));
    let http = grove_common::http_client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let r = http
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await
        .expect("the api answers on PORT");
    assert_eq!(r.status(), 200);

    // The image's HEALTHCHECK finds it the same way (PORT, BIND_ADDR unset), and fails on a
    // port where nothing answers (a worker's WORKER_HEALTH_ADDR wins over both).
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/healthcheck");
    let check = |vars: &[(&str, String)]| {
        std::process::Command::new("bash")
            .arg(script)
            .env_clear()
            .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
            .status()
            .expect("bash runs the healthcheck")
            .success()
    };
    assert!(check(&[("PORT", port.to_string())]));
    let nothing = free_port().to_string();
    assert!(!check(&[("PORT", nothing.clone())]));
    assert!(!check(&[
        ("PORT", port.to_string()),
        ("WORKER_HEALTH_ADDR", format!("0.0.0.0:{nothing}"))
    ]));
}

/// Processes that open a new database at the same moment (no lock held first) all get their
/// connection: on SQLite each switches the new file to WAL, and a switch that meets another's
/// gets "database is locked" at once, without SQLite's busy wait.
#[tokio::test]
async fn processes_opening_a_new_database_at_the_same_moment_all_migrate_it() {
    for round in 0..8 {
        let db = TestDb::new().await;
        // Started together, waited on after: each one's output is read to its end.
        let migrators: Vec<std::process::Child> = (0..6)
            .map(|_| {
                std::process::Command::new(grove_tests::binary("migrate"))
                    .env_clear()
                    .env("PATH", std::env::var("PATH").unwrap_or_default())
                    .env("DATABASE_URL", &db.url)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("migrate starts")
            })
            .collect();
        for m in migrators {
            let out = m.wait_with_output().expect("migrate runs");
            assert!(
                out.status.success(),
                "round {round}: migrate failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Thousands of agents connecting at once wait in the api's accept queue instead of being
/// dropped by the kernel: the queue is as long as the kernel allows (`net.core.somaxconn`), not
/// the 1,024 a plain bind asks for.
#[tokio::test]
async fn the_api_accept_queue_is_as_long_as_the_kernel_allows() {
    let app = grove_tests::spawn_app().await;
    let port = app.addr.rsplit(':').next().expect("a port");
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2) runs");
    let listing = String::from_utf8_lossy(&out.stdout);
    // State, Recv-Q, Send-Q (a listener's accept queue length), local, peer.
    let queue: u32 = listing
        .split_whitespace()
        .nth(2)
        .and_then(|q| q.parse().ok())
        .unwrap_or_else(|| panic!("a listener on {port}: {listing:?}"));
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .expect("somaxconn")
        .trim()
        .parse()
        .expect("a number");
    assert_eq!(queue, somaxconn.min(65_535));
}
