use super::*;
use chrono::{Datelike, NaiveDateTime, Weekday};
use chrono_tz::America::{Chicago, Los_Angeles, New_York};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn t(h: u32, m: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(h, m, 0).unwrap()
}

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).unwrap()
}

fn later(opens: &str, closes: &str) -> Opening {
    Opening::Later {
        opens_at: utc(opens),
        closes_at: utc(closes),
    }
}

fn miami() -> UsPhone {
    UsPhone::parse("+13055550142").unwrap()
}

#[test]
fn florida_number_at_2030_local_waits_for_0800_next_day() {
    let state = recipient_state(None, &miami());
    assert_eq!(state, Some("FL"));
    // 2025-06-10 20:30 EDT.
    let got = next_opening(utc("2025-06-10T20:30:00-04:00"), New_York, state);
    assert_eq!(
        got,
        later("2025-06-11T08:00:00-04:00", "2025-06-11T20:00:00-04:00")
    );
    assert_eq!(
        got.send_at(utc("2025-06-10T20:30:00-04:00")),
        utc("2025-06-11T12:00:00Z")
    );
}

#[test]
fn florida_at_0700_local_waits_for_0800_the_same_day() {
    let got = next_opening(utc("2025-06-10T07:00:00-04:00"), New_York, Some("FL"));
    assert_eq!(
        got,
        later("2025-06-10T08:00:00-04:00", "2025-06-10T20:00:00-04:00")
    );
}

#[test]
fn federal_only_state_at_2030_is_open_until_2100() {
    let now = utc("2025-06-10T20:30:00-07:00");
    let expected = Opening::Now {
        closes_at: utc("2025-06-10T21:00:00-07:00"),
    };
    assert_eq!(next_opening(now, Los_Angeles, Some("CA")), expected);
    // No state at all: the federal window too (CONTRACT 9).
    assert_eq!(next_opening(now, Los_Angeles, None), expected);
    // The window end is exclusive.
    let at_close = utc("2025-06-10T21:00:00-07:00");
    assert!(matches!(
        next_opening(at_close, Los_Angeles, None),
        Opening::Later { .. }
    ));
}

#[test]
fn texas_sunday_morning_waits_for_noon_and_weekdays_open_at_nine() {
    let sunday = utc("2025-06-08T10:15:00-05:00");
    assert_eq!(sunday.with_timezone(&Chicago).weekday(), Weekday::Sun);
    assert_eq!(
        next_opening(sunday, Chicago, Some("TX")),
        later("2025-06-08T12:00:00-05:00", "2025-06-08T21:00:00-05:00")
    );
    assert_eq!(
        next_opening(utc("2025-06-09T08:30:00-05:00"), Chicago, Some("TX")),
        later("2025-06-09T09:00:00-05:00", "2025-06-09T21:00:00-05:00")
    );
}

#[test]
fn holidays_the_state_forbids_are_skipped_and_others_are_not() {
    // Thanksgiving 2025 (Thu 27th) and the day after are both forbidden in Louisiana.
    let thanksgiving = utc("2025-11-27T10:00:00-06:00");
    assert_eq!(
        next_opening(thanksgiving, Chicago, Some("LA")),
        later("2025-11-29T08:00:00-06:00", "2025-11-29T20:00:00-06:00")
    );
    // Florida has no holiday ban.
    assert_eq!(
        next_opening(thanksgiving, New_York, Some("FL")),
        Opening::Now {
            closes_at: utc("2025-11-27T20:00:00-05:00")
        }
    );
    // Christmas 2022 fell on a Sunday: Pennsylvania forbids Sunday and the observed Monday.
    assert_eq!(
        next_opening(utc("2022-12-24T21:30:00-05:00"), New_York, Some("PA")),
        later("2022-12-27T08:00:00-05:00", "2022-12-27T21:00:00-05:00")
    );
    assert_eq!(window_on(d(2025, 12, 25), Some("AL")), None);
    assert_eq!(
        window_on(d(2025, 12, 25), Some("TX")),
        Some((t(9, 0), t(21, 0)))
    );
}

#[test]
fn holiday_names_resolve_for_any_year() {
    assert!(
        RULES
            .holiday_names_on("PA", d(2025, 4, 18))
            .contains(&"good_friday")
    );
    assert!(
        RULES
            .holiday_names_on("UT", d(2027, 7, 23))
            .contains(&"pioneer_day")
    );
    assert!(
        RULES
            .holiday_names_on("RI", d(2031, 8, 11))
            .contains(&"victory_day")
    );
    assert!(
        RULES
            .holiday_names_on("MS", d(2040, 11, 22))
            .contains(&"thanksgiving_day")
    );
    assert!(RULES.holiday_names_on("FL", d(2025, 12, 25)).is_empty());
}

#[test]
fn spring_forward_day_opens_at_0800_daylight_time() {
    // 2025-03-09: New York jumps from 02:00 EST to 03:00 EDT.
    let got = next_opening(utc("2025-03-09T06:00:00Z"), New_York, None);
    assert_eq!(got, later("2025-03-09T12:00:00Z", "2025-03-10T01:00:00Z"));
    // The day before, 08:00 was still 13:00 UTC.
    let before = next_opening(utc("2025-03-08T06:00:00Z"), New_York, None);
    assert_eq!(
        before.send_at(utc("2025-03-08T06:00:00Z")),
        utc("2025-03-08T13:00:00Z")
    );
}

#[test]
fn fall_back_day_opens_at_0800_standard_time() {
    // 2025-11-02: New York goes from 02:00 EDT back to 01:00 EST; 05:30Z is 01:30 EDT.
    let got = next_opening(utc("2025-11-02T05:30:00Z"), New_York, None);
    assert_eq!(got, later("2025-11-02T13:00:00Z", "2025-11-03T02:00:00Z"));
}

#[test]
fn local_times_in_a_gap_or_an_overlap_resolve_to_the_later_valid_instant() {
    // 02:30 never happens on spring-forward day: the clock lands on 03:00 EDT.
    assert_eq!(
        instant(New_York, d(2025, 3, 9), t(2, 30)),
        utc("2025-03-09T07:00:00Z")
    );
    // 01:30 happens twice on fall-back day: take the second (EST) one.
    assert_eq!(
        instant(New_York, d(2025, 11, 2), t(1, 30)),
        utc("2025-11-02T06:30:00Z")
    );
}

#[test]
fn a_gap_that_is_not_whole_minutes_resolves_to_the_exact_transition() {
    // 1914-01-01 Sao Paulo left local mean time (-03:06:28) for -03:00: 00:00:00-00:06:27 never
    // happened, so a time inside lands on 00:06:28, not on the next whole minute.
    let sao_paulo: Tz = "America/Sao_Paulo".parse().unwrap();
    let at = instant(sao_paulo, d(1914, 1, 1), t(0, 3));
    assert_eq!(at, utc("1914-01-01T03:06:28Z"));
    assert_eq!(
        at.with_timezone(&sao_paulo).naive_local(),
        d(1914, 1, 1).and_hms_opt(0, 6, 28).unwrap()
    );
}

#[test]
fn a_local_day_that_never_happens_is_skipped() {
    // Samoa moved across the date line: 2011-12-30 does not exist in Pacific/Apia.
    let apia: Tz = "Pacific/Apia".parse().unwrap();
    let now = apia
        .from_local_datetime(&NaiveDateTime::new(d(2011, 12, 29), t(22, 0)))
        .unwrap()
        .with_timezone(&Utc);
    let opens = apia
        .from_local_datetime(&d(2011, 12, 31).and_time(t(8, 0)))
        .unwrap();
    assert_eq!(
        next_opening(now, apia, None).send_at(now),
        opens.with_timezone(&Utc)
    );
}

#[test]
fn customer_zone_overrides_business_zone() {
    assert_eq!(
        zone(Some("America/Los_Angeles"), "America/New_York"),
        Ok(Los_Angeles)
    );
    assert_eq!(zone(None, "America/New_York"), Ok(New_York));
    assert!(zone(Some("Mars/Olympus_Mons"), "America/New_York").is_err());
    assert!(zone(None, "EST-ish").is_err());
    // 18:30 in Los Angeles is open even though it is 21:30 in New York.
    let now = utc("2025-06-11T01:30:00Z");
    let tz = zone(Some("America/Los_Angeles"), "America/New_York").unwrap();
    assert!(matches!(next_opening(now, tz, None), Opening::Now { .. }));
    assert!(matches!(
        next_opening(now, New_York, None),
        Opening::Later { .. }
    ));
}

#[test]
fn recipient_state_prefers_the_named_state_then_the_area_code() {
    assert_eq!(recipient_state(Some("GA"), &miami()), Some("GA"));
    assert_eq!(recipient_state(Some("ZZ"), &miami()), Some("FL"));
    let toronto = UsPhone::parse("+14165550100").unwrap();
    assert_eq!(recipient_state(None, &toronto), None);
    assert_eq!(recipient_states(Some("GA"), &miami()), vec!["GA", "FL"]);
    assert_eq!(recipient_states(Some("FL"), &miami()), vec!["FL"]);
    assert!(recipient_states(None, &toronto).is_empty());
}

#[test]
fn several_states_apply_the_strictest_bound_of_each() {
    // Kentucky 10:00-21:00 with Florida 08:00-20:00 leaves 10:00-20:00.
    assert_eq!(
        window_on_all(d(2025, 6, 10), &["KY", "FL"]),
        Some((t(10, 0), t(20, 0)))
    );
    // A named Georgia resident with a Florida number at 20:30 waits (Florida presumes residency).
    let now = utc("2025-06-10T20:30:00-04:00");
    let states = recipient_states(Some("GA"), &miami());
    assert!(matches!(
        next_opening_all(now, New_York, &states),
        Opening::Later { .. }
    ));
}

#[test]
fn state_windows_match_the_research_note() {
    let (mon, sat, sun) = (d(2025, 6, 9), d(2025, 6, 14), d(2025, 6, 15));
    assert_eq!(window_on(mon, Some("RI")), Some((t(9, 0), t(18, 0))));
    assert_eq!(window_on(sat, Some("RI")), Some((t(10, 0), t(17, 0))));
    assert_eq!(window_on(sun, Some("RI")), None);
    assert_eq!(window_on(mon, Some("CT")), Some((t(9, 0), t(20, 0))));
    assert_eq!(window_on(mon, Some("KY")), Some((t(10, 0), t(21, 0))));
    assert_eq!(window_on(sun, Some("MS")), None);
    assert_eq!(window_on(sun, Some("WA")), Some((t(8, 0), t(20, 0))));
    assert_eq!(window_on(mon, Some("XX")), Some((t(8, 0), t(21, 0))));
    assert_eq!(window_on(sun, None), Some((t(8, 0), t(21, 0))));
}

#[test]
fn every_state_opens_within_five_days_from_any_day_for_years() {
    let mut codes = RULES.state_codes();
    codes.push("CA");
    for code in codes {
        let mut day = d(2024, 1, 1);
        while day <= d(2031, 12, 31) {
            let now = New_York
                .from_local_datetime(&day.and_time(t(0, 0)))
                .unwrap();
            let now = now.with_timezone(&Utc);
            let opens = next_opening(now, New_York, Some(code)).send_at(now);
            assert!(
                opens - now < TimeDelta::days(5),
                "{code} from {day}: {opens}"
            );
            day = day.succ_opt().unwrap();
        }
    }
}

#[test]
fn embedded_rules_parse_and_bad_rules_are_refused() {
    assert!(rules::parse(include_str!("../../../data/quiet_hours.json")).is_ok());
    assert_eq!(RULES.state_codes().len(), 19);
    let base = |states: &str| {
        format!(
            r#"{{"about":"","federal":{{"window":["08:00","21:00"],"sources":["x"]}},
            "holiday_groups":{{}},"holidays":{{"xmas":{{"name":"x","date":"12-25"}}}},
            "states":{{{states}}}}}"#
        )
    };
    assert!(
        rules::parse(&base(
            r#""FL":{"name":"F","window":["08:00","20:00"],"sources":["s"]}"#
        ))
        .is_ok()
    );
    for bad in [
        r#""FL":{"name":"F","window":["20:00","08:00"],"sources":["s"]}"#,
        r#""FL":{"name":"F","window":["08:00","20:00"],"sources":[]}"#,
        r#""ZZ":{"name":"Z","window":["08:00","20:00"],"sources":["s"]}"#,
        r#""FL":{"name":"F","window":["08:00","20:00"],"holidays":["nope"],"sources":["s"]}"#,
        r#""FL":{"name":"F","window":["08:00","20:00"],"sunday":"maybe","sources":["s"]}"#,
        r#""FL":{"name":"F","window":["8am","20:00"],"sources":["s"]}"#,
    ] {
        assert!(rules::parse(&base(bad)).is_err(), "accepted {bad}");
    }
}
