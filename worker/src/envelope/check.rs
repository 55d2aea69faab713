//! Rules a JSON Schema cannot state (CONTRACT 8, last paragraph), checked on the assembled
//! envelope after the published schema. Every field is read defensively: the model wrote it.

use super::{coverage, modes, trace};
use grove_common::catalog::Mode;
use grove_common::schema::Violation;
use serde_json::Value;

/// Every rule violation in `envelope`, each with a JSON pointer and a short rule. Empty means the
/// envelope may be delivered (once the published schema also passes).
pub fn check(mode: &Mode, request: &Value, envelope: &Value) -> Vec<Violation> {
    let caps = mode.tier.caps();
    let mut out = Vec::new();

    if let Some(reply) = envelope.get("reply").and_then(Value::as_str) {
        let n = reply.chars().count();
        if n > caps.reply_max_chars {
            out.push(Violation::new(
                "/reply",
                format!(
                    "must be at most {} characters, is {n}; aim for under {} words",
                    caps.reply_max_chars, caps.reply_word_target
                ),
            ));
        }
    }
    count("/numbers", envelope, 0, caps.numbers_max, &mut out);
    count(
        "/actions",
        envelope,
        caps.actions_min,
        caps.actions_max,
        &mut out,
    );
    count("/caveats", envelope, 0, caps.caveats_max, &mut out);

    for (i, caveat) in items(envelope.get("caveats")).iter().enumerate() {
        let n = caveat.as_str().map(sentences).unwrap_or(1);
        if n != 1 {
            out.push(Violation::new(
                format!("/caveats/{i}"),
                "must be exactly one sentence",
            ));
        }
    }

    // "The first item is the recommendation" (spec 2.6), for any deliverable with ranked levers.
    let first_lever = envelope.pointer("/deliverable/ranked_levers/0/lever");
    let lever = envelope.pointer("/thinking/lever");
    if let (Some(Value::String(first)), Some(Value::String(lever))) = (first_lever, lever)
        && !same(first, lever)
    {
        out.push(Violation::new(
            "/deliverable/ranked_levers/0/lever",
            "must equal thinking.lever",
        ));
    }

    let numbers = envelope.get("numbers").unwrap_or(&Value::Null);
    out.extend(trace::check_numbers(
        numbers,
        &coverage::caller_figures(request),
    ));
    out.extend(modes::check(mode.id, envelope));
    out
}

fn count(path: &str, envelope: &Value, min: usize, max: usize, out: &mut Vec<Violation>) {
    let Some(list) = envelope.pointer(path).and_then(Value::as_array) else {
        return;
    };
    if list.len() > max {
        out.push(Violation::new(
            path,
            format!("must have at most {max} items"),
        ));
    } else if list.len() < min {
        out.push(Violation::new(
            path,
            format!("must have at least {min} items"),
        ));
    }
}

/// The items of an array, or none if the value is missing or not an array.
pub(super) fn items(value: Option<&Value>) -> &[Value] {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Equal after trimming, case-folding, collapsing spaces and dropping a final full stop: the
/// model restating a lever or a name must not fail on punctuation.
pub(super) fn same(a: &str, b: &str) -> bool {
    fold(a) == fold(b)
}

fn fold(s: &str) -> String {
    let s = s.trim().trim_end_matches('.');
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS: [&str; 16] = [
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "approx", "inc", "ltd", "co", "u.s",
    "no", "cf",
];

/// How many sentences `text` holds: a `.`, `!` or `?` followed by a space and more text starts a
/// new one, unless it closes an abbreviation or an initial; a line break with text after it does too.
pub(super) fn sentences(text: &str) -> usize {
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

    #[test]
    fn same_ignores_case_spacing_and_final_stop() {
        assert!(same(" Cut churn  first.", "cut churn first"));
        assert!(!same("Cut churn", "Cut costs"));
    }
}
