//! Whether one more coaching call can finish within the deadline, from the workers' load.
//!
//! The estimate: `C` slots (the workers' capacity), each run taking `S` (the mean service time
//! over the window; the slots then finish `C / S` runs a second, which is the completions per
//! second measured while they are all busy). A call with `n - 1` calls ahead of it (held by the
//! workers, being settled, or quoted a price moments ago) starts at once if `n <= C`; else it
//! waits for `ceil((n - C) / C)` rounds of the slots and then runs, finishing after
//! `(ceil((n - C) / C) + 1) * S`. Rounds, not the fluid `(n - C) * S / C`: calls that arrived
//! together finish together, so the slots free up in waves. It is admitted if that is within
//! nine tenths of the deadline (the rest is the engine's margin for storing the result and
//! answering, and the settlement before the run).
//!
//! With no run finished within the window, `S` is taken to be the whole deadline (every run is
//! bounded by it), which admits up to `C` calls and no queue; with no capacity known (no worker
//! has reported), nothing is refused: the queue's own readiness says whether workers run.

use super::Load;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    /// Not within the deadline now; room is expected after `retry_after`.
    Refuse {
        retry_after: Duration,
    },
}

/// The verdict on one more call with `ahead` calls before it.
pub fn admit(load: &Load, ahead: u64, deadline: Duration) -> Verdict {
    let slots = load.capacity;
    let n = ahead + 1;
    if slots == 0 || n <= slots {
        return Verdict::Admit;
    }
    let service = load
        .service_time()
        .unwrap_or(deadline)
        .max(Duration::from_millis(1));
    let budget = deadline * 9 / 10;
    let rounds = (n - slots).div_ceil(slots);
    let finish = service.saturating_mul(u32::try_from(rounds + 1).unwrap_or(u32::MAX));
    if finish <= budget {
        return Verdict::Admit;
    }
    // The most calls that would finish in time, and how long the excess takes to drain at
    // `slots / service` a second.
    let rounds_in_time = (budget.as_millis() / service.as_millis()).saturating_sub(1) as u64;
    let most = slots.saturating_mul(rounds_in_time + 1);
    let excess = n.saturating_sub(most);
    let drain = service.mul_f64(excess as f64 / slots as f64);
    let retry_after = Duration::from_secs(drain.as_secs_f64().ceil() as u64)
        .clamp(Duration::from_secs(1), deadline);
    Verdict::Refuse { retry_after }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(60);

    fn load(capacity: u64, served: u64, service_s: u64) -> Load {
        Load {
            backlog: 0,
            capacity,
            served,
            service_ms: served * service_s * 1000,
        }
    }

    #[test]
    fn a_free_slot_is_always_admitted_and_no_capacity_known_refuses_nothing() {
        assert_eq!(admit(&load(4, 0, 0), 3, DEADLINE), Verdict::Admit);
        assert_eq!(admit(&load(0, 0, 0), 1_000_000, DEADLINE), Verdict::Admit);
    }

    #[test]
    fn before_any_run_finished_only_the_slots_are_sold() {
        let v = admit(&load(4, 0, 0), 4, DEADLINE);
        // One call over four slots, each possibly taking the whole deadline: 15 s to drain.
        assert_eq!(
            v,
            Verdict::Refuse {
                retry_after: Duration::from_secs(15)
            }
        );
    }

    #[test]
    fn a_queue_is_admitted_while_its_rounds_fit_in_the_deadline() {
        // 10 s runs on 100 slots: 54 s is five rounds of 10 s after the first, so 500 ahead
        // (n = 501, six rounds in all: 60 s) is over, 499 ahead (n = 500: five rounds) is in.
        let l = load(100, 50, 10);
        assert_eq!(admit(&l, 499, DEADLINE), Verdict::Admit);
        let Verdict::Refuse { retry_after } = admit(&l, 500, DEADLINE) else {
            panic!("over the deadline");
        };
        // One call over what finishes in time: a tenth of a second of draining, rounded up.
        assert_eq!(retry_after, Duration::from_secs(1));
        let Verdict::Refuse { retry_after } = admit(&l, 10_000, DEADLINE) else {
            panic!("far over");
        };
        assert_eq!(retry_after, DEADLINE, "capped at the deadline");
    }
}
