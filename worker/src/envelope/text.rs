//! Reading the model's JSON and its prose defensively: shared by the envelope checks and the
//! figure tracing, so neither imports the other for a helper. The word-level comparisons are the
//! modes' rules' too, so they live with them (`grove_common::modes::words`).

use grove_common::schema::Violation;
use serde_json::Value;

pub use grove_common::modes::strings;
pub use grove_common::modes::words::{has_any, holds_phrase, phrase_at, word_count, words};

/// The items of an array, or none if the value is missing or not an array.
pub fn items(value: Option<&Value>) -> &[Value] {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

pub fn push(out: &mut Vec<Violation>, path: impl Into<String>, message: impl Into<String>) {
    out.push(Violation::new(path.into(), message));
}

/// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS: [&str; 16] = [
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "approx", "inc", "ltd", "co", "u.s",
    "no", "cf",
];

/// How many sentences `text` holds: a `.`, `!` or `?` followed by a space and more text starts a
/// new one, unless it closes an abbreviation or an initial; a line break with text after it does too.
pub fn sentences(text: &str) -> usize {
    let chars: Vec<char> = text.trim().chars().collect();
    if chars.is_empty() {
        return 0;
    }
    let mut count = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            count += 1;
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            continue;
        }
        if matches!(c, '.' | '!' | '?') {
            let mut j = i;
            while j < chars.len() && matches!(chars[j], '.' | '!' | '?' | '"' | '\'' | ')') {
                j += 1;
            }
            let spaced = j < chars.len() && chars[j] == ' ';
            if spaced && c == '.' && abbreviation_before(&chars, i) {
                i = j;
                continue;
            }
            if spaced {
                count += 1;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    count
}

fn abbreviation_before(chars: &[char], dot: usize) -> bool {
    let start = chars[..dot]
        .iter()
        .rposition(|c| c.is_whitespace() || *c == '(')
        .map_or(0, |p| p + 1);
    let word: String = chars[start..dot].iter().collect::<String>().to_lowercase();
    let initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    initial || ABBREVIATIONS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sentences_but_not_abbreviations_decimals_or_initials() {
        assert_eq!(sentences("One claim, with a clause; and more."), 1);
        assert_eq!(
            sentences("Costs $3.50 per unit, e.g. for J. Smith vs. others."),
            1
        );
        assert_eq!(sentences("First. Second."), 2);
        assert_eq!(sentences("Is it? Maybe"), 2);
        assert_eq!(sentences("Line one\nLine two"), 2);
        assert_eq!(sentences("   "), 0);
        assert_eq!(sentences("Ends with a quote \"like this.\""), 1);
    }
}
