//! Figures prose may use without tracing them, because they state no fact about the caller's
//! business. The set is kept narrow on purpose:
//!
//! - **small counts**: whole numbers 0 to 10 without `$` or `%` ("3 steps", "2 crews"), and 100,
//!   the scale of a score or a percentage ("47 out of 100");
//! - **years**: 1990 to 2100, written without a separator ("in 2025");
//! - **ordinals and labels**: "1st", "3rd", and a whole number up to 365 after "day", "step",
//!   "week", "month", "tier", "stage", "phase", "level", "rank", "option", "email", "touch",
//!   "round", "version", "number", "no." or "#" ("by day 14", "step 3");
//! - **durations** from a short list of planning horizons, written with their unit ("30 days",
//!   "a 20-minute call", "within 48 hours"): minutes 1–10, 15, 20, 30, 45, 60, 90; hours 1–12,
//!   24, 48, 72; days 1–14, 21, 28, 30, 45, 60, 90, 120, 180, 365; weeks 1–8, 10, 12, 13, 26, 52;
//!   months 1–12, 18, 24, 36; quarters 1–4; years 1–5, 10. A duration followed by a rate ("12
//!   hours a week") is a quantity of the business, not a horizon, and must trace;
//! - **times of day**: "9am", "5 pm", "10:30";
//! - the phrase "24/7".
//!
//! In a text that states the caller's facts (a strict field), small counts above 1 and
//! durations are facts too and must trace; years, labels, times of day, 0, 1 and 100 still pass.

use super::figures::Span;

/// True when the figure at `span` in `chars` is a stated constant as defined above; `strict`
/// for a text of facts.
pub fn is_stated(chars: &[char], span: &Span, strict: bool) -> bool {
    let f = span.figure;
    if !f.is_plain() {
        return false;
    }
    let whole = f.value.fract() == 0.0 && f.half_step == 0.5;
    let v = f.value;
    let written: String = chars[span.chars.clone()].iter().collect();
    if whole && (v <= 1.0 || v == 100.0 || (!strict && v <= 10.0)) {
        return true;
    }
    if whole && (1990.0..=2100.0).contains(&v) && !written.contains(',') {
        return true;
    }
    let after: String = chars[span.chars.end..].iter().take(24).collect();
    let after_lower = after.to_lowercase();
    if whole
        && ["st", "nd", "rd", "th"]
            .iter()
            .any(|s| glued(&after_lower, s))
    {
        return true;
    }
    if whole && v <= 24.0 && (glued(&after_lower, "am") || glued(&after_lower, "pm")) {
        return true;
    }
    if whole
        && v <= 24.0
        && [" am", " pm", " a.m", " p.m"]
            .iter()
            .any(|s| after_lower.starts_with(s))
    {
        return true;
    }
    if clock(chars, span) {
        return true;
    }
    if written == "24" && after.starts_with("/7") {
        return true;
    }
    if whole && v <= 365.0 && label_before(chars, span.chars.start) {
        return true;
    }
    !strict && whole && duration(&after_lower, v)
}

/// `after` starts with `suffix` and no letter follows it.
fn glued(after: &str, suffix: &str) -> bool {
    after.starts_with(suffix) && !after[suffix.len()..].starts_with(|c: char| c.is_alphabetic())
}

fn clock(chars: &[char], span: &Span) -> bool {
    let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let (s, e) = (span.chars.start, span.chars.end);
    (chars.get(e) == Some(&':') && digit(e + 1) && digit(e + 2))
        || (s >= 2 && chars[s - 1] == ':' && digit(s - 2))
}

const LABELS: [&str; 17] = [
    "day", "step", "week", "month", "tier", "stage", "phase", "level", "rank", "option", "email",
    "touch", "round", "version", "number", "no.", "#",
];

fn label_before(chars: &[char], start: usize) -> bool {
    let before: String = chars[..start].iter().collect();
    let before = before.to_lowercase();
    if before.ends_with('#') {
        return true;
    }
    let word = before.split_whitespace().last().unwrap_or("");
    let word = word.trim_start_matches(['(', '"']).trim_end_matches('-');
    before.ends_with([' ', '-']) && LABELS.contains(&word)
}

/// The unit right after a figure ("30 days", "20-minute", "48-hour") with its allowed values,
/// unless a rate follows ("12 hours a week").
fn duration(after: &str, v: f64) -> bool {
    let rest = after.trim_start_matches([' ', '-']);
    let rest = rest
        .strip_prefix("business ")
        .or_else(|| rest.strip_prefix("working "))
        .unwrap_or(rest);
    let unit: String = rest.chars().take_while(|c| c.is_alphabetic()).collect();
    let unit = unit.strip_suffix('s').unwrap_or(&unit);
    let n = v as u32;
    let allowed = match unit {
        "minute" | "min" => (1..=10).contains(&n) || [15, 20, 30, 45, 60, 90].contains(&n),
        "hour" | "hr" => (1..=12).contains(&n) || [24, 48, 72].contains(&n),
        "day" => (1..=14).contains(&n) || [21, 28, 30, 45, 60, 90, 120, 180, 365].contains(&n),
        "week" | "wk" => (1..=8).contains(&n) || [10, 12, 13, 26, 52].contains(&n),
        "month" => (1..=12).contains(&n) || [18, 24, 36].contains(&n),
        "quarter" => (1..=4).contains(&n),
        "year" => (1..=5).contains(&n) || n == 10,
        _ => false,
    };
    if !allowed {
        return false;
    }
    let tail = rest[unit.len()..].trim_start_matches('s');
    let tail = tail.trim_start();
    let rate = ["a ", "per ", "each ", "every ", "/"]
        .iter()
        .any(|p| tail.starts_with(p) && is_unit_word(tail[p.len()..].trim_start()));
    !rate
}

fn is_unit_word(s: &str) -> bool {
    let w: String = s.chars().take_while(|c| c.is_alphabetic()).collect();
    matches!(
        w.as_str(),
        "day" | "week" | "month" | "year" | "quarter" | "hour" | "wk" | "mo" | "yr"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::figures::spans;

    /// The stated-constant verdict for each figure of `text`, in order.
    fn verdicts(text: &str) -> Vec<bool> {
        let chars: Vec<char> = text.chars().collect();
        spans(text)
            .iter()
            .map(|s| is_stated(&chars, s, false))
            .collect()
    }

    #[test]
    fn small_counts_years_ordinals_and_labels_are_stated() {
        assert_eq!(
            verdicts("3 steps in 2025, the 2nd call, by day 14, step 12"),
            vec![true; 5]
        );
        assert_eq!(verdicts("#11 and tier 3"), vec![true, true]);
        assert_eq!(verdicts("11 clients, $5, 7%"), vec![false, false, false]);
        assert_eq!(verdicts("2,025 leads"), vec![false]);
    }

    #[test]
    fn durations_from_the_list_but_not_rates_or_odd_spans() {
        assert_eq!(
            verdicts("within 30 days, a 20-minute call, 48 hours, 90-day plan, 18 months"),
            vec![true; 5]
        );
        assert_eq!(verdicts("26 hours, 17 days, 40 minutes"), vec![false; 3]);
        assert_eq!(
            verdicts("12 hours a week, 20 hours per month"),
            vec![false, false]
        );
        assert_eq!(verdicts("5 business days"), vec![true]);
    }

    #[test]
    fn a_text_of_facts_keeps_only_labels_years_and_times() {
        let chars: Vec<char> = "3 clinics for 30 days by day 14 in 2025 at 9am"
            .chars()
            .collect();
        let strict: Vec<bool> = spans(&chars.iter().collect::<String>())
            .iter()
            .map(|s| is_stated(&chars, s, true))
            .collect();
        assert_eq!(strict, vec![false, false, true, true, true]);
    }

    #[test]
    fn times_of_day_and_round_the_clock() {
        assert_eq!(
            verdicts("call at 9am or 5 pm, 10:30 sharp, 24/7"),
            vec![true; 6]
        );
    }
}
