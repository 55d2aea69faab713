//! A fresh database per test: a SQLite file, or a new PostgreSQL database when
//! `GROVE_TEST_DB=postgres` (the test script runs the suite once with each).

use std::sync::atomic::{AtomicU32, Ordering};

pub const DEFAULT_PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

pub struct TestDb {
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    File(std::path::PathBuf),
    Postgres { admin_url: String, name: String },
}

fn unique_name() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "grove_t_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    )
}

pub fn backend() -> String {
    std::env::var("GROVE_TEST_DB").unwrap_or_else(|_| "sqlite".into())
}

/// True on PostgreSQL; elsewhere says why a PostgreSQL-only test does nothing, and is false.
pub fn postgres_only() -> bool {
    let on = backend() == "postgres";
    if !on {
        eprintln!("PostgreSQL only: GROVE_TEST_DB=postgres");
    }
    on
}

impl TestDb {
    /// A database on the backend `GROVE_TEST_DB` names.
    pub async fn new() -> Self {
        Self::on(&backend()).await
    }

    /// A new database on `GROVE_TEST_DB`'s backend, migrated, with a connection to it.
    pub async fn migrated() -> (Self, sea_orm::DatabaseConnection) {
        let test_db = Self::new().await;
        let db = grove_common::db::connect_url(&test_db.url)
            .await
            .expect("database");
        grove_migrations::run(&db).await.expect("migrations");
        (test_db, db)
    }

    /// A database on `backend` (`sqlite` or `postgres`).
    pub async fn on(backend: &str) -> Self {
        let name = unique_name();
        if backend == "postgres" {
            let admin_url =
                std::env::var("TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_PG_ADMIN_URL.into());
            let admin = grove_common::db::connect_url(&admin_url)
                .await
                .expect("PostgreSQL is reachable (scripts/services starts it)");
            use sea_orm::ConnectionTrait;
            admin
                .execute_unprepared(&format!("CREATE DATABASE {name}"))
                .await
                .expect("create test database");
            let _ = admin.close().await;
            let base = admin_url
                .rsplit_once('/')
                .map(|(b, _)| b)
                .unwrap_or(&admin_url);
            Self {
                url: format!("{base}/{name}"),
                cleanup: Cleanup::Postgres { admin_url, name },
            }
        } else {
            let path = std::env::temp_dir().join(format!("{name}.db"));
            Self {
                url: format!("sqlite://{}?mode=rwc", path.display()),
                cleanup: Cleanup::File(path),
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                // The liveness locks of the processes that used it (`db::liveness`).
                let _ = std::fs::remove_dir_all(format!("{}.owners", path.display()));
            }
            Cleanup::Postgres { admin_url, name } => {
                // Drop runs outside any runtime guarantee; use a private one on a thread.
                let (admin_url, name) = (admin_url.clone(), name.clone());
                let _ = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    if let Ok(rt) = rt {
                        rt.block_on(async {
                            if let Ok(admin) = grove_common::db::connect_url(&admin_url).await {
                                use sea_orm::ConnectionTrait;
                                let _ = admin
                                    .execute_unprepared(&format!(
                                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                                    ))
                                    .await;
                                let _ = admin.close().await;
                            }
                        });
                    }
                })
                .join();
            }
        }
    }
}

/// Faults and interleavings a test injects into the database under the running system, as
/// triggers (written once for each backend). They act inside the system's own statements, so a
/// test can place an event exactly between two of them without timing anything.
/// A coaching call's row in `status` (mary, `diagnose_growth`, a caller's body), with no lease
/// and no payment: a test changes what it needs, then inserts it (`insert_row`).
pub fn call_row(
    status: grove_common::ledger::CallStatus,
) -> grove_common::db::entities::call::ActiveModel {
    use grove_common::db::entities::call;
    use sea_orm::ActiveValue::Set;
    let id = uuid::Uuid::now_v7();
    let now = chrono::Utc::now();
    call::ActiveModel {
        id: Set(id),
        kind: Set(grove_common::ledger::CallKind::Coaching),
        agent: Set(Some(grove_common::catalog::CoachId::Mary)),
        mode: Set(Some(grove_common::catalog::ModeId::DiagnoseGrowth)),
        payer: Set("0x00000000000000000000000000000000000000aa".into()),
        request_hash: Set(format!("hash-{id}")),
        request: Set(crate::llm::caller_body("diagnose_growth")),
        status: Set(status),
        attempts: Set(0),
        runs: Set(0),
        error: Set(None),
        receipt_id: Set(format!("rcpt_{}", id.simple())),
        request_id: Set("req-test".into()),
        created_at: Set(now),
        updated_at: Set(now),
        completed_at: Set(None),
    }
}

/// Inserts a call's row; its id.
pub async fn insert_row(
    db: &sea_orm::DatabaseConnection,
    row: grove_common::db::entities::call::ActiveModel,
) -> uuid::Uuid {
    use sea_orm::EntityTrait;
    let id = row.id.clone().unwrap();
    grove_common::db::entities::call::Entity::insert(row)
        .exec(db)
        .await
        .expect("call row");
    id
}

/// A coaching call in `status` (`call_row`), inserted.
pub async fn insert_call(
    db: &sea_orm::DatabaseConnection,
    status: grove_common::ledger::CallStatus,
) -> uuid::Uuid {
    insert_row(db, call_row(status)).await
}

pub mod inject {
    use sea_orm::ConnectionTrait;

    fn is_postgres(url: &str) -> bool {
        url.starts_with("postgres")
    }

    async fn run(url: &str, statements: &[String]) {
        let db = grove_common::db::connect_url(url)
            .await
            .expect("test database");
        for sql in statements {
            db.execute_unprepared(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let _ = db.close().await;
    }

    /// Every insert into `table` fails (until [`heal`]), as a lost connection or a full disk
    /// would make it fail.
    pub async fn fail_inserts(url: &str, table: &str) {
        let name = format!("grove_fail_{table}");
        let statements = if is_postgres(url) {
            vec![
                format!(
                    "CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN \
                     RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql"
                ),
                format!(
                    "CREATE TRIGGER {name} BEFORE INSERT ON {table} \
                     FOR EACH ROW EXECUTE FUNCTION {name}()"
                ),
            ]
        } else {
            vec![format!(
                "CREATE TRIGGER {name} BEFORE INSERT ON {table} \
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )]
        };
        run(url, &statements).await;
    }

    /// Undoes [`fail_inserts`].
    pub async fn heal(url: &str, table: &str) {
        let name = format!("grove_fail_{table}");
        let statements = if is_postgres(url) {
            vec![
                format!("DROP TRIGGER {name} ON {table}"),
                format!("DROP FUNCTION {name}()"),
            ]
        } else {
            vec![format!("DROP TRIGGER {name}")]
        };
        run(url, &statements).await;
    }

    /// Runs `statement` (valid SQL on both backends) right after each insert into `table`, in
    /// the inserting transaction.
    pub async fn after_insert(url: &str, table: &str, statement: &str) {
        let name = format!("grove_after_{table}");
        let statements = if is_postgres(url) {
            vec![
                format!(
                    "CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN {statement}; \
                     RETURN NULL; END $$ LANGUAGE plpgsql"
                ),
                format!(
                    "CREATE TRIGGER {name} AFTER INSERT ON {table} \
                     FOR EACH ROW EXECUTE FUNCTION {name}()"
                ),
            ]
        } else {
            vec![format!(
                "CREATE TRIGGER {name} AFTER INSERT ON {table} BEGIN {statement}; END"
            )]
        };
        run(url, &statements).await;
    }
}

/// PostgreSQL: cuts the connection holding the liveness lock of `key`
/// (`grove_common::db::liveness`), as a restart or failover cuts it, and waits until the server
/// no longer lists the lock.
pub async fn cut_liveness_lock(db: &sea_orm::DatabaseConnection, key: i64) {
    use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
    let namespace = i64::from(grove_common::db::liveness::NAMESPACE);
    let lock = "FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 \
                AND classid = $1::bigint::oid AND objid = $2::bigint::oid";
    let sql = |what: &str| {
        Statement::from_sql_and_values(
            DatabaseBackend::Postgres,
            format!("SELECT {what} {lock}"),
            [namespace.into(), key.into()],
        )
    };
    db.execute_raw(sql("pg_terminate_backend(pid)"))
        .await
        .expect("terminate the lock's connection");
    crate::wait_until("the lock released", async || {
        db.query_all_raw(sql("1"))
            .await
            .expect("pg_locks")
            .is_empty()
    })
    .await;
}
