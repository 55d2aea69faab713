//! The `worker` process's own settings, read once at start-up beside the shared `Config`
//! (documented in `.env.example`): where it reports its health, and how long its queue
//! consumers may try to get back to Redis before the process gives up.

use grove_common::config::ConfigError;
use std::{net::SocketAddr, time::Duration};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerSettings {
    /// `WORKER_HEALTH_ADDR`: serve `/healthz`, `/readyz` and `/metrics` here (unset: no server).
    pub health_addr: Option<SocketAddr>,
    /// `QUEUE_RECOVERY_LIMIT_S`: a consumer failing this long without a heartbeat stops the
    /// process (exit status 1) so that its supervisor restarts it.
    pub recovery_limit: Duration,
    /// `DATABASE_RECOVERY_LIMIT_S`: the database unreachable this long (the liveness lock not
    /// taken again) stops the process (exit status 1).
    pub database_limit: Duration,
    /// `WORKER_DRAIN_S`: on SIGTERM, how long the jobs in hand may take to finish before the
    /// process stops anyway (set the supervisor's grace period above it).
    pub drain_limit: Duration,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            health_addr: None,
            recovery_limit: crate::runtime::DEFAULT_RECOVERY_LIMIT,
            database_limit: crate::runtime::DEFAULT_RECOVERY_LIMIT,
            drain_limit: crate::runtime::DEFAULT_DRAIN_LIMIT,
        }
    }
}

fn invalid(var: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        var,
        problem: problem.into(),
    }
}

impl WorkerSettings {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let health_addr = match set("WORKER_HEALTH_ADDR") {
            None => None,
            Some(v) => Some(v.trim().parse().map_err(|_| {
                invalid(
                    "WORKER_HEALTH_ADDR",
                    format!("expected host:port, got {v:?}"),
                )
            })?),
        };
        let limit = |var: &'static str| match set(var) {
            None => Ok(crate::runtime::DEFAULT_RECOVERY_LIMIT),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(s) if (1..=3600).contains(&s) => Ok(Duration::from_secs(s)),
                _ => Err(invalid(var, "must be between 1 and 3600 seconds")),
            },
        };
        Ok(Self {
            health_addr,
            recovery_limit: limit("QUEUE_RECOVERY_LIMIT_S")?,
            database_limit: limit("DATABASE_RECOVERY_LIMIT_S")?,
            drain_limit: match set("WORKER_DRAIN_S") {
                None => crate::runtime::DEFAULT_DRAIN_LIMIT,
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(s) if (1..=3600).contains(&s) => Duration::from_secs(s),
                    _ => {
                        return Err(invalid(
                            "WORKER_DRAIN_S",
                            "must be between 1 and 3600 seconds",
                        ));
                    }
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<WorkerSettings, ConfigError> {
        WorkerSettings::from_lookup(|k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn defaults_serve_no_health_and_give_up_after_a_minute() {
        assert_eq!(read(&[]).expect("defaults"), WorkerSettings::default());
        assert_eq!(
            WorkerSettings::default().recovery_limit,
            Duration::from_secs(60)
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (k, v) in [
            ("WORKER_HEALTH_ADDR", "nowhere"),
            ("QUEUE_RECOVERY_LIMIT_S", "0"),
            ("QUEUE_RECOVERY_LIMIT_S", "soon"),
            ("DATABASE_RECOVERY_LIMIT_S", "0"),
            ("WORKER_DRAIN_S", "0"),
        ] {
            let err = read(&[(k, v)]).unwrap_err();
            assert!(err.to_string().starts_with(k), "{err}");
        }
        let ok = read(&[
            ("WORKER_HEALTH_ADDR", "127.0.0.1:9100"),
            ("QUEUE_RECOVERY_LIMIT_S", "15"),
        ])
        .expect("valid");
        assert_eq!(
            ok.health_addr,
            Some("127.0.0.1:9100".parse().expect("addr"))
        );
        assert_eq!(ok.recovery_limit, Duration::from_secs(15));
    }
}
