//! Holiday dates for any year, from the rules the data file names: fixed dates (with the
//! weekend "observed" shift), nth weekday of a month, and offsets from Easter.

use chrono::{Datelike, Days, NaiveDate, Weekday};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum HolidayRule {
    /// Same date every year. With `observed`, a Saturday date is also kept the Friday before and a
    /// Sunday date the Monday after, as federal and most state calendars do.
    Fixed {
        month: u32,
        day: u32,
        observed: bool,
    },
    /// The nth `weekday` on or after day `from_day` of `month` (nth = -1: the last one in the
    /// month), then shifted by `plus_days` (the day after Thanksgiving).
    NthWeekday {
        month: u32,
        weekday: Weekday,
        nth: i8,
        from_day: u32,
        plus_days: i64,
    },
    /// Easter Sunday (Gregorian) shifted by `plus_days`: Good Friday -2, Mardi Gras -47.
    Easter { plus_days: i64 },
}

impl HolidayRule {
    /// Whether `date` is this holiday (or its observed day).
    pub(super) fn falls_on(&self, date: NaiveDate) -> bool {
        // A Jan 1 on a Saturday is observed on Dec 31 of the year before, so look one year ahead.
        [date.year(), date.year() + 1]
            .into_iter()
            .flat_map(|y| self.dates(y))
            .any(|d| d == date)
    }

    /// The day(s) this holiday occupies in `year`: the date itself plus any observed day.
    pub(super) fn dates(&self, year: i32) -> Vec<NaiveDate> {
        match *self {
            HolidayRule::Fixed {
                month,
                day,
                observed,
            } => {
                let Some(date) = NaiveDate::from_ymd_opt(year, month, day) else {
                    return Vec::new();
                };
                let shifted = match date.weekday() {
                    Weekday::Sat if observed => date.pred_opt(),
                    Weekday::Sun if observed => date.succ_opt(),
                    _ => None,
                };
                std::iter::once(date).chain(shifted).collect()
            }
            HolidayRule::NthWeekday {
                month,
                weekday,
                nth,
                from_day,
                plus_days,
            } => nth_weekday(year, month, weekday, nth, from_day)
                .and_then(|d| shift(d, plus_days))
                .into_iter()
                .collect(),
            HolidayRule::Easter { plus_days } => easter_sunday(year)
                .and_then(|d| shift(d, plus_days))
                .into_iter()
                .collect(),
        }
    }
}

fn shift(date: NaiveDate, by: i64) -> Option<NaiveDate> {
    let days = Days::new(by.unsigned_abs());
    if by >= 0 {
        date.checked_add_days(days)
    } else {
        date.checked_sub_days(days)
    }
}

fn nth_weekday(
    year: i32,
    month: u32,
    weekday: Weekday,
    nth: i8,
    from_day: u32,
) -> Option<NaiveDate> {
    if nth > 0 {
        let start = NaiveDate::from_ymd_opt(year, month, from_day)?;
        let ahead =
            (7 + weekday.num_days_from_monday() - start.weekday().num_days_from_monday()) % 7;
        let date = start.checked_add_days(Days::new(u64::from(ahead) + 7 * (nth as u64 - 1)))?;
        (date.month() == month).then_some(date)
    } else {
        // Last such weekday: step back from the last day of the month.
        let first_next = if month == 12 {
            NaiveDate::from_ymd_opt(year + 1, 1, 1)?
        } else {
            NaiveDate::from_ymd_opt(year, month + 1, 1)?
        };
        let last = first_next.pred_opt()?;
        let back = (7 + last.weekday().num_days_from_monday() - weekday.num_days_from_monday()) % 7;
        last.checked_sub_days(Days::new(u64::from(back)))
    }
}

/// Gregorian Easter Sunday (the anonymous "Meeus/Jones/Butcher" computus).
pub(super) fn easter_sunday(year: i32) -> Option<NaiveDate> {
    let y = year;
    let a = y.rem_euclid(19);
    let (b, c) = (y.div_euclid(100), y.rem_euclid(100));
    let (d, e) = (b / 4, b % 4);
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let (i, k) = (c / 4, c % 4);
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    NaiveDate::from_ymd_opt(y, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn easter_matches_published_dates() {
        for (y, m, day) in [
            (2024, 3, 31),
            (2025, 4, 20),
            (2026, 4, 5),
            (2027, 3, 28),
            (2038, 4, 25),
        ] {
            assert_eq!(easter_sunday(y), Some(d(y, m, day)), "{y}");
        }
    }

    #[test]
    fn thanksgiving_memorial_day_and_election_day_move_with_the_calendar() {
        let thanksgiving = HolidayRule::NthWeekday {
            month: 11,
            weekday: Weekday::Thu,
            nth: 4,
            from_day: 1,
            plus_days: 0,
        };
        assert_eq!(thanksgiving.dates(2025), vec![d(2025, 11, 27)]);
        assert_eq!(thanksgiving.dates(2026), vec![d(2026, 11, 26)]);
        let memorial = HolidayRule::NthWeekday {
            month: 5,
            weekday: Weekday::Mon,
            nth: -1,
            from_day: 1,
            plus_days: 0,
        };
        assert_eq!(memorial.dates(2025), vec![d(2025, 5, 26)]);
        assert_eq!(memorial.dates(2027), vec![d(2027, 5, 31)]);
        // First Tuesday after the first Monday: Nov 1 2022 was a Tuesday, so Nov 8.
        let election = HolidayRule::NthWeekday {
            month: 11,
            weekday: Weekday::Tue,
            nth: 1,
            from_day: 2,
            plus_days: 0,
        };
        assert_eq!(election.dates(2022), vec![d(2022, 11, 8)]);
        assert_eq!(election.dates(2026), vec![d(2026, 11, 3)]);
        let black_friday = HolidayRule::NthWeekday {
            month: 11,
            weekday: Weekday::Thu,
            nth: 4,
            from_day: 1,
            plus_days: 1,
        };
        assert_eq!(black_friday.dates(2025), vec![d(2025, 11, 28)]);
    }

    #[test]
    fn fixed_holidays_on_weekends_are_also_observed_on_the_nearest_weekday() {
        let christmas = HolidayRule::Fixed {
            month: 12,
            day: 25,
            observed: true,
        };
        // 2022-12-25 was a Sunday: observed Monday the 26th.
        assert!(christmas.falls_on(d(2022, 12, 25)) && christmas.falls_on(d(2022, 12, 26)));
        // 2021-12-25 was a Saturday: observed Friday the 24th.
        assert!(christmas.falls_on(d(2021, 12, 24)));
        assert!(!christmas.falls_on(d(2025, 12, 24)) && christmas.falls_on(d(2025, 12, 25)));
        // 2022-01-01 was a Saturday: observed Friday 2021-12-31, in the previous year.
        let new_year = HolidayRule::Fixed {
            month: 1,
            day: 1,
            observed: true,
        };
        assert!(new_year.falls_on(d(2021, 12, 31)));
        let unshifted = HolidayRule::Fixed {
            month: 1,
            day: 1,
            observed: false,
        };
        assert!(!unshifted.falls_on(d(2021, 12, 31)));
    }

    #[test]
    fn easter_offsets_give_good_friday_and_mardi_gras() {
        let good_friday = HolidayRule::Easter { plus_days: -2 };
        assert_eq!(good_friday.dates(2025), vec![d(2025, 4, 18)]);
        let mardi_gras = HolidayRule::Easter { plus_days: -47 };
        assert_eq!(mardi_gras.dates(2025), vec![d(2025, 3, 4)]);
        assert_eq!(mardi_gras.dates(2026), vec![d(2026, 2, 17)]);
    }
}
