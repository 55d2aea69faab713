//! One process's recent outcomes of one provider: per-second buckets over the policy's window.
//! The gate opens when the failures in the window reach the threshold and are at least as many
//! as the successes (so a busy provider failing one call in twenty stays closed, and a quiet
//! one that fails every call it gets opens after the threshold).

use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct Window {
    span_s: u64,
    threshold: u32,
    /// (second, successes, failures), oldest first; none older than `span_s`.
    buckets: VecDeque<(u64, u32, u32)>,
    /// Reported once: the caller opens the gate, and the window starts afresh when it sees the
    /// gate change (`clear`).
    tripped: bool,
}

impl Window {
    pub(super) fn new(span_s: u64, threshold: u32) -> Self {
        Self {
            span_s: span_s.max(1),
            threshold: threshold.max(1),
            buckets: VecDeque::new(),
            tripped: false,
        }
    }

    /// Counts one outcome at second `now_s` (monotonic). True exactly when this outcome makes
    /// the window trip.
    pub(super) fn record(&mut self, now_s: u64, failed: bool) -> bool {
        while self
            .buckets
            .front()
            .is_some_and(|(s, _, _)| s + self.span_s <= now_s)
        {
            self.buckets.pop_front();
        }
        match self.buckets.back_mut() {
            Some((s, ok, bad)) if *s == now_s => {
                if failed {
                    *bad += 1;
                } else {
                    *ok += 1;
                }
            }
            _ => self
                .buckets
                .push_back((now_s, u32::from(!failed), u32::from(failed))),
        }
        if self.tripped || !failed {
            return false;
        }
        let (ok, bad) = self
            .buckets
            .iter()
            .fold((0u32, 0u32), |(o, b), (_, ok, bad)| {
                (o.saturating_add(*ok), b.saturating_add(*bad))
            });
        self.tripped = bad >= self.threshold && bad >= ok;
        self.tripped
    }

    /// Lets a later failure trip the window again (the gate's open did not get written).
    pub(super) fn untrip(&mut self) {
        self.tripped = false;
    }
}

#[cfg(test)]
mod tests {
    use super::Window;

    #[test]
    fn the_threshold_of_failures_within_the_window_trips_it_once() {
        let mut w = Window::new(30, 3);
        assert!(!w.record(0, true));
        assert!(!w.record(1, true));
        assert!(w.record(2, true), "the third failure within 30 s trips");
        assert!(!w.record(3, true), "reported once");
        w.untrip();
        assert!(w.record(4, true), "tripped again once untripped");
    }

    #[test]
    fn failures_older_than_the_window_do_not_count() {
        let mut w = Window::new(30, 3);
        assert!(!w.record(0, true));
        assert!(!w.record(10, true));
        assert!(
            !w.record(31, true),
            "the failure at 0 s left the window at 30 s"
        );
        assert!(w.record(32, true));
    }

    #[test]
    fn a_provider_that_mostly_succeeds_stays_closed() {
        let mut w = Window::new(30, 3);
        for s in 0..10 {
            assert!(!w.record(s, false));
        }
        for s in 10..19 {
            assert!(!w.record(s, true), "9 failures beside 10 successes");
        }
        assert!(w.record(19, true), "10 failures beside 10 successes trips");
    }

    #[test]
    fn successes_alone_never_trip() {
        let mut w = Window::new(5, 1);
        for s in 0..100 {
            assert!(!w.record(s, false));
        }
        assert!(w.buckets.len() <= 5, "old buckets are dropped");
    }
}
