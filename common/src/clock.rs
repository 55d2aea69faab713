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

pub trait Clock: Send + Sync + 'static {
    /// The service's instant (tests move it).
    fn now(&self) -> DateTime<Utc>;

    /// The real instant, whatever `now` says.
    fn wall(&self) -> DateTime<Utc> {
        Utc::now()
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
        Utc::now()
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
}
