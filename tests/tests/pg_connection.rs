//! How Grove connects to PostgreSQL: a server on this host's loopback is reached without TLS
//! unless the URL asks for it (issue 12: TLS on loopback protected nothing and was 30 % of the
//! server's CPU in `--bin paid`'s replays), and a URL that asks for TLS still gets it.

use grove_tests::TestDb;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};

/// Whether this connection's session with the server is encrypted (`pg_stat_ssl`).
async fn encrypted(db: &DatabaseConnection) -> bool {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        ))
        .await
        .expect("pg_stat_ssl")
        .expect("a row for this backend");
    row.try_get::<bool>("", "ssl").expect("ssl column")
}

#[tokio::test]
async fn loopback_connections_are_plain_unless_the_url_asks_for_tls() {
    let test_db = TestDb::on("postgres").await;
    assert!(
        test_db.url.contains("127.0.0.1") || test_db.url.contains("localhost"),
        "the test server is on loopback: {}",
        test_db.url
    );
    let sep = if test_db.url.contains('?') { '&' } else { '?' };
    // A server that offers no TLS cannot tell the two apart; CI's PostgreSQL (Debian's
    // package) offers it, and this test says so rather than passing on nothing.
    let required = grove_common::db::connect_url(&format!("{}{sep}sslmode=require", test_db.url))
        .await
        .expect("this PostgreSQL offers TLS (Debian's package does); the test needs it to tell");
    assert!(
        encrypted(&required).await,
        "sslmode=require is honoured on loopback"
    );
    let default = grove_common::db::connect_url(&test_db.url)
        .await
        .expect("db");
    assert!(
        !encrypted(&default).await,
        "a loopback server with no sslmode stated is reached without TLS"
    );
    required.close().await.expect("close");
    default.close().await.expect("close");
}

/// `DATABASE_POOL_SIZE` bounds the connections a process holds (issue 12: past a few per core,
/// more connections only made PostgreSQL's processes take turns): twelve statements at once on
/// a pool of three run on at most three server processes, and on more than one.
#[tokio::test]
async fn a_process_holds_at_most_its_pool_size_of_connections() {
    let test_db = TestDb::on("postgres").await;
    let mut env = grove_tests::default_env();
    env.insert("DATABASE_URL".into(), test_db.url.clone());
    env.insert("DATABASE_POOL_SIZE".into(), "3".into());
    let config = grove_common::config::Config::from_map(&env).expect("config");
    let db = grove_common::db::connect(&config).await.expect("db");
    let statements = (0..12).map(|_| {
        db.query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT pg_backend_pid() AS pid, pg_sleep(0.05)::text AS slept",
        ))
    });
    let mut pids = std::collections::BTreeSet::new();
    for row in futures::future::join_all(statements).await {
        let row = row.expect("statement").expect("a row");
        pids.insert(row.try_get::<i32>("", "pid").expect("pid"));
    }
    assert!(
        pids.len() <= 3,
        "at most the pool's 3 connections: {pids:?}"
    );
    assert!(pids.len() > 1, "the statements ran side by side: {pids:?}");
    db.close().await.expect("close");
}
