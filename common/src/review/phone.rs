//! The recipient's phone number, parsed once at the edge, and the area-code → state table that
//! quiet hours fall back on when the request names no state.

use std::collections::HashMap;
use std::fmt;
use std::sync::LazyLock;

/// A `+1` NANP number in E.164 form: `+1` then NPA (area code), NXX (exchange), XXXX.
/// `Debug` prints the masked form, so the full number cannot leak through a stray `{:?}`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UsPhone(String);

/// Why a number from another country is refused.
pub const NOT_US: &str = "v1 serves only +1 (US) numbers";

impl UsPhone {
    pub fn parse(raw: &str) -> Result<UsPhone, &'static str> {
        let digits = raw
            .strip_prefix('+')
            .ok_or("must be E.164: '+' then the country code and number, no spaces")?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err("must be E.164: '+' then digits only, no spaces or punctuation");
        }
        if !(8..=15).contains(&digits.len()) || digits.starts_with('0') {
            return Err("must be E.164: '+', a country code not starting with 0, 8 to 15 digits");
        }
        let national = digits.strip_prefix('1').ok_or(NOT_US)?;
        let b = national.as_bytes();
        if b.len() != 10 {
            return Err("a +1 number has exactly 10 digits after the +1");
        }
        if matches!(b[0], b'0' | b'1') {
            return Err("the area code cannot start with 0 or 1");
        }
        if matches!(b[3], b'0' | b'1') {
            return Err("the exchange (digits 4-6 after +1) cannot start with 0 or 1");
        }
        // N11 codes (211, 411, 911, ...) are service codes, never area codes or exchanges.
        if &b[1..3] == b"11" || &b[4..6] == b"11" {
            return Err("N11 service codes (211, 411, 911, ...) are not dialable numbers");
        }
        Ok(UsPhone(format!("+{digits}")))
    }

    /// The full number, for the provider call and the suppression list only; never log it.
    pub fn e164(&self) -> &str {
        &self.0
    }

    pub fn area_code(&self) -> u16 {
        // Parse guaranteed `+1` followed by ten ASCII digits.
        self.0.as_bytes()[2..5]
            .iter()
            .fold(0, |acc, d| acc * 10 + u16::from(d - b'0'))
    }

    /// `+1 305-***-**42`: enough to recognise the number, not enough to dial it.
    pub fn masked(&self) -> String {
        let s = &self.0;
        format!("+1 {}-***-**{}", &s[2..5], &s[10..12])
    }
}

/// Serialised as the E.164 text it was parsed from, and parsed again when read back.
impl serde::Serialize for UsPhone {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for UsPhone {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        UsPhone::parse(&raw).map_err(serde::de::Error::custom)
    }
}

impl fmt::Debug for UsPhone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UsPhone({})", self.masked())
    }
}

/// The fifty states and DC, the values `customer.state` may take.
pub const US_STATES: [&str; 51] = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
    "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM",
    "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA",
    "WV", "WI", "WY",
];

/// The interned code for a US state or DC (`"FL"` → `Some("FL")`), `None` for anything else.
pub fn us_state(code: &str) -> Option<&'static str> {
    US_STATES.iter().copied().find(|s| *s == code)
}

static AREA_CODES: LazyLock<HashMap<u16, &'static str>> = LazyLock::new(|| {
    parse_area_codes(include_str!("../../data/area_codes.csv"))
        .expect("embedded data/area_codes.csv is valid (checked by a unit test)")
});

/// The US state (or DC) an area code is assigned to; `None` for Canadian and Caribbean codes,
/// US territories, non-geographic codes and anything unassigned.
pub fn state_for_area_code(area_code: u16) -> Option<&'static str> {
    AREA_CODES.get(&area_code).copied()
}

fn parse_area_codes(csv: &str) -> Result<HashMap<u16, &'static str>, String> {
    let mut map = HashMap::new();
    let rows = csv
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .skip(1); // header
    for (n, line) in rows {
        let bad = |why: &str| format!("area_codes.csv line {}: {why}: {line:?}", n + 1);
        let (code, state) = line
            .split_once(',')
            .ok_or_else(|| bad("expected 2 columns"))?;
        let code: u16 = code.trim().parse().map_err(|_| bad("area code"))?;
        if !(200..=999).contains(&code) {
            return Err(bad("area code out of range"));
        }
        let state = us_state(state.trim()).ok_or_else(|| bad("not a US state or DC"))?;
        if map.insert(code, state).is_some() {
            return Err(bad("duplicate area code"));
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_us_numbers_and_exposes_parts() {
        let p = UsPhone::parse("+13055550142").unwrap();
        assert_eq!(p.e164(), "+13055550142");
        assert_eq!(p.area_code(), 305);
        assert_eq!(p.masked(), "+1 305-***-**42");
    }

    #[test]
    fn debug_output_never_contains_the_full_number() {
        let p = UsPhone::parse("+14155550123").unwrap();
        let shown = format!("{p:?}");
        assert!(!shown.contains("5550123"), "{shown}");
        assert!(shown.contains("+1 415-***-**23"), "{shown}");
    }

    #[test]
    fn rejects_what_is_not_e164_or_not_a_nanp_shape() {
        for (raw, why) in [
            ("13055550142", "no plus"),
            ("+1 305 555 0142", "spaces"),
            ("+1305555014a", "letter"),
            ("+0123456789", "country code 0"),
            ("+1234567", "7 digits"),
            ("+1234567890123456", "16 digits"),
            ("+442071838750", "UK"),
            ("+130555501421", "11 national digits"),
            ("+1305555014", "9 national digits"),
            ("+10555550142", "area code starts with 0"),
            ("+11555550142", "area code starts with 1"),
            ("+13051550142", "exchange starts with 1"),
            ("+13050550142", "exchange starts with 0"),
            ("+19115550142", "N11 area code"),
            ("+13059110142", "N11 exchange"),
            ("", "empty"),
            ("+", "plus only"),
        ] {
            assert!(UsPhone::parse(raw).is_err(), "{why}: {raw:?} was accepted");
        }
    }

    #[test]
    fn non_us_country_codes_get_the_v1_message() {
        assert_eq!(
            UsPhone::parse("+442071838750"),
            Err("v1 serves only +1 (US) numbers")
        );
    }

    #[test]
    fn area_codes_map_to_states_and_foreign_nanp_codes_do_not() {
        for (code, state) in [
            (305, "FL"),
            (786, "FL"),
            (212, "NY"),
            (512, "TX"),
            (206, "WA"),
            (202, "DC"),
            (405, "OK"),
            (410, "MD"),
            (601, "MS"),
            (203, "CT"),
            (504, "LA"),
            (205, "AL"),
            (401, "RI"),
            (907, "AK"),
            (808, "HI"),
        ] {
            assert_eq!(state_for_area_code(code), Some(state), "{code}");
        }
        // Canada, the Caribbean, US territories, toll-free and unassigned codes.
        for code in [
            416, 604, 514, 204, 867, 876, 809, 242, 787, 939, 340, 671, 800, 888, 900, 999,
        ] {
            assert_eq!(state_for_area_code(code), None, "{code}");
        }
    }

    #[test]
    fn embedded_area_code_table_is_well_formed_and_covers_every_state() {
        let map = parse_area_codes(include_str!("../../data/area_codes.csv")).unwrap();
        assert!(map.len() > 350, "only {} area codes", map.len());
        for state in US_STATES {
            assert!(
                map.values().any(|s| *s == state),
                "{state} has no area code"
            );
        }
        assert!(parse_area_codes("area_code,state\n305,XX\n").is_err());
        assert!(parse_area_codes("area_code,state\n305,FL\n305,FL\n").is_err());
        assert!(parse_area_codes("area_code,state\n30x,FL\n").is_err());
    }

    #[test]
    fn us_state_accepts_states_and_dc_only() {
        assert_eq!(us_state("FL"), Some("FL"));
        assert_eq!(us_state("DC"), Some("DC"));
        assert_eq!(us_state("PR"), None);
        assert_eq!(us_state("fl"), None);
        assert_eq!(us_state("ZZ"), None);
    }
}
