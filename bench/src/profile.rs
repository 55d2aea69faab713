//! What one paid call asks of PostgreSQL and Redis: transactions and rows from
//! `pg_stat_database` for the benchmark's own database, and Redis commands from `INFO
//! commandstats`, read before and after a run and divided by its calls (issue 31). With
//! `GROVE_BENCH_LOG_STATEMENTS=1` the database also logs every statement it runs
//! (`log_statement = all`, this database only) so that the server's log names them.

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use std::collections::BTreeMap;

/// Counters of the database and of Redis at one moment.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// When they were read (to find the run's statements in the server's log by time).
    at: Option<chrono::DateTime<chrono::Utc>>,
    pg: BTreeMap<&'static str, i64>,
    redis: BTreeMap<String, i64>,
}

const PG_COLUMNS: [&str; 6] = [
    "xact_commit",
    "xact_rollback",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
];

/// A connection to the server that holds `url`'s database, and that database's name.
pub struct Probe {
    admin: DatabaseConnection,
    database: String,
    redis: Option<redis::Client>,
}

impl Probe {
    pub async fn new(url: &str, redis_url: Option<&str>) -> Option<Self> {
        if !url.starts_with("postgres") {
            return None;
        }
        let database = url.rsplit('/').next()?.split('?').next()?.to_owned();
        let admin = grove_common::db::connect_url(url).await.ok()?;
        if std::env::var("GROVE_BENCH_LOG_STATEMENTS").is_ok_and(|v| v == "1") {
            // Applies to connections opened from now on: run before the service connects.
            let _ = admin
                .execute_unprepared(&format!(
                    "ALTER DATABASE {database} SET log_statement = 'all'"
                ))
                .await;
        }
        // Experiments: settings for this database only, e.g. `synchronous_commit = off`.
        if let Ok(set) = std::env::var("GROVE_BENCH_DB_SET") {
            let _ = admin
                .execute_unprepared(&format!("ALTER DATABASE {database} SET {set}"))
                .await;
        }
        let redis = redis_url.and_then(|u| redis::Client::open(u).ok());
        Some(Self {
            admin,
            database,
            redis,
        })
    }

    pub async fn read(&self) -> Counters {
        let mut out = Counters {
            at: Some(grove_common::clock::wall()),
            ..Default::default()
        };
        // The statistics collector publishes a backend's counts when it goes idle, at most once
        // a second: a fresh snapshot is asked for, and what is read may lag by that much.
        let _ = self
            .admin
            .execute_unprepared("SELECT pg_stat_clear_snapshot()")
            .await;
        let sql = format!(
            "SELECT {} FROM pg_stat_database WHERE datname = '{}'",
            PG_COLUMNS.join(", "),
            self.database
        );
        let backend = self.admin.get_database_backend();
        if let Ok(Some(row)) = self
            .admin
            .query_one_raw(Statement::from_string(backend, sql))
            .await
        {
            for c in PG_COLUMNS {
                out.pg.insert(c, row.try_get::<i64>("", c).unwrap_or(0));
            }
        }
        if let Some(client) = &self.redis
            && let Ok(mut conn) = client.get_multiplexed_async_connection().await
        {
            let info: String = redis::cmd("INFO")
                .arg("commandstats")
                .query_async(&mut conn)
                .await
                .unwrap_or_default();
            for line in info.lines() {
                // cmdstat_get:calls=12,usec=3,...
                let Some((name, rest)) = line
                    .strip_prefix("cmdstat_")
                    .and_then(|l| l.split_once(':'))
                else {
                    continue;
                };
                let calls = rest
                    .split(',')
                    .find_map(|kv| kv.strip_prefix("calls="))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                out.redis.insert(name.to_owned(), calls);
            }
        }
        out
    }

    /// Waits out the statistics collector's delay before a final read.
    pub async fn settle() {
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
}

/// Prints what `calls` calls cost between `before` and `after`, per call.
pub fn print(label: &str, calls: usize, before: &Counters, after: &Counters) {
    let per = |d: i64| d as f64 / calls.max(1) as f64;
    let at = |c: &Counters| c.at.map(|t| t.format("%H:%M:%S%.3f").to_string());
    println!(
        "{label}: per call over {calls} calls ({} to {} UTC)",
        at(before).unwrap_or_default(),
        at(after).unwrap_or_default()
    );
    for c in PG_COLUMNS {
        let d = after.pg.get(c).unwrap_or(&0) - before.pg.get(c).unwrap_or(&0);
        println!("  postgres {c:<14} {:>8.2}", per(d));
    }
    let mut total = 0;
    for (name, n) in &after.redis {
        let d = n - before.redis.get(name).unwrap_or(&0);
        if d > 0 {
            total += d;
            println!("  redis {name:<17} {:>8.2}", per(d));
        }
    }
    println!("  redis {:<17} {:>8.2}", "(all commands)", per(total));
}
