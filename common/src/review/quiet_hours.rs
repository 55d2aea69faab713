//! Quiet hours: when a message may reach the recipient, in the recipient's local time (CONTRACT 9).
//! The federal 08:00–21:00 window, narrowed by the recipient's state where it is known, with the
//! state's Sunday and holiday bans. Pure functions of the instant they are given.

mod holidays;
mod rules;

use super::phone::{UsPhone, state_for_area_code, us_state};
use chrono::{DateTime, Days, LocalResult, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use rules::{DayRule, Rules};
use std::sync::LazyLock;

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    rules::parse(include_str!("../../data/quiet_hours.json"))
        .expect("embedded data/quiet_hours.json is valid (checked by a unit test)")
});

/// When the next send may happen. `closes_at` is exclusive: a send must be handed over before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// Inside a window now.
    Now { closes_at: DateTime<Utc> },
    /// Outside every window: wait until `opens_at`.
    Later {
        opens_at: DateTime<Utc>,
        closes_at: DateTime<Utc>,
    },
}

impl Opening {
    /// The earliest instant a send may happen.
    pub fn send_at(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        match *self {
            Opening::Now { .. } => now,
            Opening::Later { opens_at, .. } => opens_at,
        }
    }

    /// The end of the window the send falls in (caps the provider's validity period).
    pub fn closes_at(&self) -> DateTime<Utc> {
        match *self {
            Opening::Now { closes_at } | Opening::Later { closes_at, .. } => closes_at,
        }
    }
}

/// The recipient's zone: the customer's if given, else the business's. Never a guess.
pub fn zone(customer_tz: Option<&str>, business_tz: &str) -> Result<Tz, &'static str> {
    parse_zone(customer_tz.unwrap_or(business_tz))
}

/// An IANA zone name as chrono-tz knows it (`America/Chicago`); case matters.
pub fn parse_zone(name: &str) -> Result<Tz, &'static str> {
    name.parse::<Tz>()
        .map_err(|_| "not an IANA time zone name (e.g. America/Chicago)")
}

/// The state whose rule applies: the one the request names, else the one the area code implies.
pub fn recipient_state(explicit: Option<&str>, phone: &UsPhone) -> Option<&'static str> {
    explicit
        .and_then(us_state)
        .or_else(|| state_for_area_code(phone.area_code()))
}

/// Every state that could claim the recipient: the named one and the area code's. Florida presumes
/// a Florida area code is a Florida resident, so a caller that wants the strictest reading passes
/// both to [`next_opening_all`].
pub fn recipient_states(explicit: Option<&str>, phone: &UsPhone) -> Vec<&'static str> {
    let mut states: Vec<&'static str> = explicit.and_then(us_state).into_iter().collect();
    if let Some(s) = state_for_area_code(phone.area_code())
        && !states.contains(&s)
    {
        states.push(s);
    }
    states
}

/// The local window on `date`, or `None` when sending is forbidden that whole day.
/// A state without a stricter rule (or no state) gets the federal window.
pub fn window_on(date: NaiveDate, state: Option<&str>) -> Option<(NaiveTime, NaiveTime)> {
    window_on_all(date, state.as_slice())
}

/// The window every listed state allows on `date` (their intersection with the federal one).
pub fn window_on_all(date: NaiveDate, states: &[&str]) -> Option<(NaiveTime, NaiveTime)> {
    let (mut start, mut end) = RULES.federal;
    for code in states {
        let Some(rule) = RULES.state(code) else {
            continue;
        };
        match RULES.day_rule(rule, date) {
            DayRule::Forbidden => return None,
            DayRule::Window((s, e)) => {
                start = start.max(s);
                end = end.min(e);
            }
        }
    }
    (start < end).then_some((start, end))
}

/// The current or next sending window for a recipient in `tz` under `state`'s rule.
pub fn next_opening(now: DateTime<Utc>, tz: Tz, state: Option<&str>) -> Opening {
    next_opening_all(now, tz, state.as_slice())
}

/// Far enough to cross any run of Sundays and holidays in the data (the longest is four days).
const HORIZON_DAYS: u64 = 14;

/// [`next_opening`] under every listed state's rule at once.
pub fn next_opening_all(now: DateTime<Utc>, tz: Tz, states: &[&str]) -> Opening {
    let today = now.with_timezone(&tz).date_naive();
    for ahead in 0..=HORIZON_DAYS {
        let Some(date) = today.checked_add_days(Days::new(ahead)) else {
            break;
        };
        let Some((open, close)) = window_on_all(date, states) else {
            continue;
        };
        let (opens_at, closes_at) = (instant(tz, date, open), instant(tz, date, close));
        // A window swallowed by a clock change (or already over) is no window.
        if opens_at >= closes_at || now >= closes_at {
            continue;
        }
        return if now >= opens_at {
            Opening::Now { closes_at }
        } else {
            Opening::Later {
                opens_at,
                closes_at,
            }
        };
    }
    // Unreachable with the shipped data (a unit test walks every state for years). Should it ever
    // happen, an empty window far ahead is safe: a guard requiring opens_at <= now < closes_at can
    // never pass it, so nothing is sent while the data is fixed.
    let never = now + TimeDelta::days(HORIZON_DAYS as i64);
    Opening::Later {
        opens_at: never,
        closes_at: never,
    }
}

/// The UTC instant of local `date` `time` in `tz`. A time that occurs twice (clocks go back) is
/// the later one; a time that never occurs (clocks go forward) is the first instant after the gap.
fn instant(tz: Tz, date: NaiveDate, time: NaiveTime) -> DateTime<Utc> {
    let local = date.and_time(time);
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(_, later) => later.with_timezone(&Utc),
        LocalResult::None => {
            // Gaps are minutes to a day long (Samoa skipped 2011-12-30); find where the clock lands.
            (1..=48 * 60)
                .find_map(|m| {
                    tz.from_local_datetime(&(local + TimeDelta::minutes(m)))
                        .earliest()
                })
                .map(|t| {
                    // Step back to the exact transition instant: the first valid minute may be past it.
                    let mut t = t.with_timezone(&Utc);
                    while (t - TimeDelta::seconds(1)).with_timezone(&tz).naive_local() >= local {
                        t -= TimeDelta::seconds(1);
                    }
                    t
                })
                .unwrap_or_else(|| Utc.from_utc_datetime(&local))
        }
    }
}

#[cfg(test)]
mod tests;
