//! The doctor (`api check`, `worker check`): each dependency the configuration names is probed
//! once, as the process would use it, and reported on one line with what to do when it fails.
//! Probes live with the code that owns each dependency (the database with the migrations, the
//! facilitator and chain with the api, the model and Twilio with the worker); this module holds
//! the report they add to and the probes every process shares (Redis).

use std::{fmt::Write as _, future::Future, time::Duration};

/// How long one probe may take: a dependency slower than this to answer a single request is a
/// finding in itself.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What one probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Works; the text says what was seen (a version, a chain id, a model name).
    Pass(String),
    /// Does not work: what is wrong, and what an operator does about it.
    Fail { problem: String, fix: String },
    /// Not configured here, so not probed (the text says why that is fine, or what it means).
    Skip(String),
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub verdict: Verdict,
}

impl Check {
    pub fn pass(name: &'static str, seen: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Pass(seen.into()),
        }
    }

    pub fn fail(name: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Fail {
                problem: problem.into(),
                fix: fix.into(),
            },
        }
    }

    pub fn skip(name: &'static str, why: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Skip(why.into()),
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self.verdict, Verdict::Fail { .. })
    }
}

/// Runs `probe` under `PROBE_TIMEOUT`; a probe that does not finish is a failure naming `fix`.
pub async fn bounded(name: &'static str, fix: &str, probe: impl Future<Output = Check>) -> Check {
    match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
        Ok(check) => check,
        Err(_) => Check::fail(
            name,
            format!("no answer within {} s", PROBE_TIMEOUT.as_secs()),
            fix,
        ),
    }
}

/// Every check of one process, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn push(&mut self, check: Check) {
        self.checks.push(check);
    }

    pub fn extend(&mut self, checks: impl IntoIterator<Item = Check>) {
        self.checks.extend(checks);
    }

    /// Whether any check failed (the command then exits non-zero).
    pub fn failed(&self) -> bool {
        self.checks.iter().any(Check::failed)
    }

    /// One line per check: `✓ name: seen`, `✗ name: problem — fix: …`, `- name: skipped (why)`,
    /// then a summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let _ = match &check.verdict {
                Verdict::Pass(seen) => writeln!(out, "✓ {}: {seen}", check.name),
                Verdict::Fail { problem, fix } => {
                    writeln!(out, "✗ {}: {problem} — fix: {fix}", check.name)
                }
                Verdict::Skip(why) => writeln!(out, "- {}: skipped ({why})", check.name),
            };
        }
        let failed = self.checks.iter().filter(|c| c.failed()).count();
        let _ = if failed == 0 {
            writeln!(out, "all {} checks passed", self.checks.len())
        } else {
            writeln!(out, "{failed} of {} checks failed", self.checks.len())
        };
        out
    }
}

/// Redis (`REDIS_URL`): reachable, answering commands, and its version.
pub async fn redis(url: Option<&crate::config::Secret>) -> Check {
    const NAME: &str = "redis";
    let Some(url) = url else {
        return Check::skip(NAME, "REDIS_URL unset: jobs run in this process");
    };
    let fix = "start Redis or correct REDIS_URL (redis://host:port or rediss:// for TLS)";
    bounded(NAME, fix, async {
        let client = match redis::Client::open(url.expose()) {
            Ok(c) => c,
            Err(_) => return Check::fail(NAME, "REDIS_URL is not a Redis URL", fix),
        };
        let mut conn = match client.get_multiplexed_async_connection().await {
            Ok(c) => c,
            // The error text may quote the URL (and its password): say only what kind it is.
            Err(e) => return Check::fail(NAME, format!("cannot connect ({:?})", e.kind()), fix),
        };
        let info: Result<String, _> = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await;
        match info {
            Ok(info) => {
                let version = info
                    .lines()
                    .find_map(|l| l.strip_prefix("redis_version:"))
                    .unwrap_or("unknown version")
                    .trim()
                    .to_owned();
                Check::pass(NAME, format!("Redis {version} answers"))
            }
            Err(e) => Check::fail(
                NAME,
                format!("connected, but INFO failed ({:?})", e.kind()),
                fix,
            ),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_has_one_line_per_check_and_fails_if_any_check_fails() {
        let mut report = Report::default();
        report.push(Check::pass("database", "SQLite, schema up to date"));
        report.push(Check::skip("redis", "REDIS_URL unset"));
        assert!(!report.failed());
        report.push(Check::fail(
            "rpc",
            "chain 1, not Base (8453)",
            "point BASE_RPC_URL at Base",
        ));
        assert!(report.failed());
        assert_eq!(
            report.render(),
            "✓ database: SQLite, schema up to date\n\
             - redis: skipped (REDIS_URL unset)\n\
             ✗ rpc: chain 1, not Base (8453) — fix: point BASE_RPC_URL at Base\n\
             1 of 3 checks failed\n"
        );
    }

    #[tokio::test]
    async fn an_unreachable_redis_fails_without_quoting_its_url() {
        let url = crate::config::Secret::new("redis://:hunter2@127.0.0.1:1");
        let check = redis(Some(&url)).await;
        assert!(check.failed(), "{check:?}");
        assert!(!format!("{check:?}").contains("hunter2"));
    }
}
