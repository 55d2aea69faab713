//! The one source of "now". A `Clock` has two readings:
//!
//! - `now`, the service's instant: idempotency windows, quiet hours, consent age, cooldowns and
//!   follow-up timing read it, so tests can pin an instant (and move it) instead of sleeping or
//!   racing the wall clock;
//! - `wall`, the real instant: what the outside world measures against (a payment's
//!   `validAfter`/`validBefore` on chain, token lifetimes), and what retry schedules, leases and
//!   stored record times use. Tests never freeze it: a frozen wall would stall every retry.

use chrono::{DateTime, TimeDelta, Utc};
use std::sync::{Arc, Mutex, MutexGuard};

/// The real instant, for code that holds no [`Clock`]: record times, leases, heartbeats. The
/// one place that reads the system clock; [`Clock::wall`] and [`SystemClock`] read it here.
pub fn wall() -> DateTime<Utc> {
    Utc::now()
}

pub trait Clock: Send + Sync + 'static {
    /// The service's instant (tests move it).
    fn now(&self) -> DateTime<Utc>;

    /// The real instant, whatever `now` says.
    fn wall(&self) -> DateTime<Utc> {
        wall()
    }

    /// `wall` in Unix seconds (0 before the epoch).
    fn wall_unix(&self) -> u64 {
        u64::try_from(self.wall().timestamp()).unwrap_or(0)
    }
}

/// The real wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        wall()
    }
}

/// A clock that only moves when told to. Clones share the same instant, so a test can hand one
/// clone to the code under test and keep another to advance time.
#[derive(Clone, Debug)]
pub struct ManualClock {
    at: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self {
            at: Arc::new(Mutex::new(at)),
        }
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.lock() = at;
    }

    pub fn advance(&self, by: TimeDelta) {
        let mut at = self.lock();
        *at += by;
    }

    // A panic while holding the lock cannot leave a half-written instant behind (assignment of a
    // Copy value), so a poisoned lock is still safe to read.
    fn lock(&self) -> MutexGuard<'_, DateTime<Utc>> {
        self.at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_the_instant() {
        let start = Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap();
        let clock = ManualClock::new(start);
        let seen_by_code: Arc<dyn Clock> = Arc::new(clock.clone());
        assert_eq!(seen_by_code.now(), start);

        clock.advance(TimeDelta::minutes(90));
        assert_eq!(seen_by_code.now(), start + TimeDelta::minutes(90));

        let later = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        clock.set(later);
        assert_eq!(seen_by_code.now(), later);
    }

    #[test]
    fn system_clock_is_close_to_the_wall_clock() {
        let drift = (SystemClock.now() - Utc::now()).num_seconds().abs();
        assert!(drift < 5, "drift {drift}s");
    }

    /// One clock: the libraries and binaries read the system clock only through this module
    /// (`wall()` or a `Clock`), so a test that pins or moves time is never bypassed unseen.
    #[test]
    fn nothing_but_this_module_reads_the_system_clock() {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    rust_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for krate in ["src", "api/src", "common/src", "worker/src"] {
            rust_files(&root.join(krate), &mut files);
        }
        assert!(files.len() > 100, "found only {} files", files.len());
        let readers: Vec<String> = files
            .iter()
            .filter(|p| !p.ends_with("common/src/clock.rs"))
            .filter(|p| std::fs::read_to_string(p).is_ok_and(|text| text.contains("Utc::now()")))
            .map(|p| p.display().to_string())
            .collect();
        assert!(
            readers.is_empty(),
            "Utc::now() outside the clock: {readers:?}"
        );
    }
}
