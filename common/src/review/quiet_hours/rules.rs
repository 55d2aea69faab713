//! `data/quiet_hours.json`, parsed and checked once: the federal window, the named holidays and
//! each stricter state's rule. Keeping the law in data lets counsel review one file.

use super::holidays::HolidayRule;
use crate::review::phone::us_state;
use chrono::{Datelike, NaiveDate, NaiveTime, Weekday};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// An allowed sending window in local wall-clock time, `[start, end)`.
pub(super) type Window = (NaiveTime, NaiveTime);

#[derive(Debug)]
pub(super) enum DayRule {
    Window(Window),
    Forbidden,
}

#[derive(Debug)]
pub(super) struct StateRule {
    /// Monday to Saturday, and Sunday unless overridden.
    window: Window,
    saturday: Option<DayRule>,
    sunday: Option<DayRule>,
    /// Indexes into `Rules::holidays`.
    holidays: Vec<usize>,
}

#[derive(Debug)]
pub(super) struct Rules {
    pub(super) federal: Window,
    holidays: Vec<(String, HolidayRule)>,
    states: HashMap<&'static str, StateRule>,
}

impl Rules {
    pub(super) fn state(&self, code: &str) -> Option<&StateRule> {
        self.states.get(code)
    }

    /// The state's own rule for `date` (before intersecting with the federal window).
    pub(super) fn day_rule(&self, rule: &StateRule, date: NaiveDate) -> DayRule {
        if rule
            .holidays
            .iter()
            .any(|&i| self.holidays[i].1.falls_on(date))
        {
            return DayRule::Forbidden;
        }
        let special = match date.weekday() {
            Weekday::Sat => rule.saturday.as_ref(),
            Weekday::Sun => rule.sunday.as_ref(),
            _ => None,
        };
        match special {
            Some(DayRule::Forbidden) => DayRule::Forbidden,
            Some(DayRule::Window(w)) => DayRule::Window(*w),
            None => DayRule::Window(rule.window),
        }
    }

    #[cfg(test)]
    pub(super) fn holiday_names_on(&self, code: &str, date: NaiveDate) -> Vec<&str> {
        let Some(rule) = self.states.get(code) else {
            return Vec::new();
        };
        rule.holidays
            .iter()
            .map(|&i| &self.holidays[i])
            .filter(|(_, h)| h.falls_on(date))
            .map(|(id, _)| id.as_str())
            .collect()
    }

    #[cfg(test)]
    pub(super) fn state_codes(&self) -> Vec<&'static str> {
        self.states.keys().copied().collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[allow(dead_code)]
    about: String,
    federal: RawFederal,
    holiday_groups: BTreeMap<String, Vec<String>>,
    holidays: BTreeMap<String, RawHoliday>,
    states: BTreeMap<String, RawState>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFederal {
    window: [String; 2],
    sources: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHoliday {
    #[allow(dead_code)]
    name: String,
    date: Option<String>,
    #[serde(default)]
    observed: bool,
    month: Option<u32>,
    weekday: Option<Weekday>,
    nth: Option<i8>,
    from_day: Option<u32>,
    plus_days: Option<i64>,
    easter_plus_days: Option<i64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawDay {
    Window([String; 2]),
    Forbidden(Forbidden),
}

#[derive(Deserialize)]
enum Forbidden {
    #[serde(rename = "forbidden")]
    Forbidden,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    #[allow(dead_code)]
    name: String,
    window: [String; 2],
    saturday: Option<RawDay>,
    sunday: Option<RawDay>,
    #[serde(default)]
    holidays: Vec<String>,
    #[allow(dead_code)]
    note: Option<String>,
    sources: Vec<String>,
}

pub(super) fn parse(json: &str) -> Result<Rules, String> {
    let raw: RawFile = serde_json::from_str(json).map_err(|e| format!("quiet_hours.json: {e}"))?;
    if raw.federal.sources.is_empty() {
        return Err("federal: no sources".into());
    }
    let federal = window(&raw.federal.window).map_err(|e| format!("federal: {e}"))?;

    let mut holidays = Vec::new();
    for (id, h) in raw.holidays {
        let rule = holiday(&h).map_err(|e| format!("holiday {id}: {e}"))?;
        holidays.push((id, rule));
    }
    let index = |id: &str| holidays.iter().position(|(h, _)| h == id);

    let mut states = HashMap::new();
    for (code, s) in raw.states {
        let err = |e: String| format!("state {code}: {e}");
        let key = us_state(&code).ok_or_else(|| err("not a US state or DC".into()))?;
        if s.sources.is_empty() {
            return Err(err("no sources".into()));
        }
        let day = |d: &Option<RawDay>| -> Result<Option<DayRule>, String> {
            Ok(match d {
                None => None,
                Some(RawDay::Forbidden(_)) => Some(DayRule::Forbidden),
                Some(RawDay::Window(w)) => Some(DayRule::Window(window(w)?)),
            })
        };
        let mut ids = Vec::new();
        for name in &s.holidays {
            match raw.holiday_groups.get(name) {
                Some(group) => ids.extend(group.iter().map(String::as_str)),
                None => ids.push(name.as_str()),
            }
        }
        let mut idx = Vec::new();
        for id in ids {
            idx.push(index(id).ok_or_else(|| err(format!("unknown holiday {id:?}")))?);
        }
        let rule = StateRule {
            window: window(&s.window).map_err(err)?,
            saturday: day(&s.saturday).map_err(err)?,
            sunday: day(&s.sunday).map_err(err)?,
            holidays: idx,
        };
        states.insert(key, rule);
    }
    Ok(Rules {
        federal,
        holidays,
        states,
    })
}

fn window([start, end]: &[String; 2]) -> Result<Window, String> {
    let t = |s: &str| NaiveTime::parse_from_str(s, "%H:%M").map_err(|_| format!("bad time {s:?}"));
    let (start, end) = (t(start)?, t(end)?);
    if start >= end {
        return Err(format!("window {start}-{end} is empty"));
    }
    Ok((start, end))
}

fn holiday(h: &RawHoliday) -> Result<HolidayRule, String> {
    let rule = match (&h.date, h.month, h.easter_plus_days) {
        (Some(date), None, None) => {
            let (m, d) = date.split_once('-').ok_or("date must be MM-DD")?;
            let month = m.parse().map_err(|_| "bad month")?;
            let day = d.parse().map_err(|_| "bad day")?;
            // 2024 is a leap year, so this accepts every real month-day.
            NaiveDate::from_ymd_opt(2024, month, day).ok_or("no such date")?;
            HolidayRule::Fixed {
                month,
                day,
                observed: h.observed,
            }
        }
        (None, Some(month), None) => {
            let nth = h.nth.ok_or("nth missing")?;
            if !(nth == -1 || (1..=5).contains(&nth)) || !(1..=12).contains(&month) {
                return Err("month 1-12 and nth 1-5 or -1".into());
            }
            HolidayRule::NthWeekday {
                month,
                weekday: h.weekday.ok_or("weekday missing")?,
                nth,
                from_day: h.from_day.unwrap_or(1),
                plus_days: h.plus_days.unwrap_or(0),
            }
        }
        (None, None, Some(plus_days)) => HolidayRule::Easter { plus_days },
        _ => return Err("exactly one of date, month or easter_plus_days".into()),
    };
    Ok(rule)
}
