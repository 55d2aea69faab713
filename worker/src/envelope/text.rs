//! Reading the model's JSON and its prose defensively: shared by the envelope checks, the
//! per-mode rules and the figure tracing, so none of them imports another for a helper.

use grove_common::schema::Violation;
use serde_json::Value;

/// The items of an array, or none if the value is missing or not an array.
pub fn items(value: Option<&Value>) -> &[Value] {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The string at `key`, if it is one.
pub fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The integer at `key`, if it is one.
pub fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// The string at a JSON pointer, if it is one.
pub fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

pub fn push(out: &mut Vec<Violation>, path: impl Into<String>, message: impl Into<String>) {
    out.push(Violation::new(path.into(), message));
}

/// Equal after trimming, case-folding, collapsing spaces and dropping a final full stop: the
/// model restating a lever or a name must not fail on punctuation.
pub fn same(a: &str, b: &str) -> bool {
    fold(a) == fold(b)
}

fn fold(s: &str) -> String {
    let s = s.trim().trim_end_matches('.');
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Words as a reader counts them: runs of non-space characters.
pub fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Lower-case alphanumeric words, apostrophes kept ("don't").
pub fn words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// True when `haystack` holds `phrase` as whole words (case-insensitive): "close rate" is in
/// "our close rate is low" but "rate" is not in "separate".
#[cfg(test)]
pub fn has_phrase(haystack: &str, phrase: &str) -> bool {
    holds_phrase(&words(haystack), phrase)
}

/// True when any of `phrases` is in `haystack` as whole words. The haystack is split once: the
/// phrase lists run to dozens, and splitting it per phrase was a visible part of a paid call's
/// CPU (issue 12).
pub fn has_any(haystack: &str, phrases: &[&str]) -> bool {
    let hay = words(haystack);
    phrases.iter().any(|p| holds_phrase(&hay, p))
}

/// `has_phrase` over a haystack already split by `words`.
/// The phrase's words are compared in place, not lowercased into new strings: this runs for
/// every phrase of every list on every answer (issue 12).
pub fn holds_phrase(hay: &[String], phrase: &str) -> bool {
    phrase_at(hay, phrase).is_some()
}

/// Where `phrase` first stands in a haystack split by `words`: the range of its words.
pub fn phrase_at(hay: &[String], phrase: &str) -> Option<std::ops::Range<usize>> {
    // The phrase is split once, not once per window of the haystack.
    let mut parts = phrase
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(Needle::new);
    let mut short = [Needle::EMPTY; 6];
    let mut n = 0;
    for part in parts.by_ref().take(short.len()) {
        short[n] = part;
        n += 1;
    }
    let long: Vec<Needle<'_>>;
    let needle = if n < short.len() {
        &short[..n]
    } else {
        long = short.into_iter().chain(parts).collect();
        &long[..]
    };
    let (first, rest) = needle.split_first()?;
    hay.windows(needle.len())
        .position(|w| {
            first.is_lowercase_of(&w[0])
                && rest.iter().zip(&w[1..]).all(|(p, h)| p.is_lowercase_of(h))
        })
        .map(|at| at..at + needle.len())
}

/// One word of a phrase, and whether it is ASCII (then it is compared byte by byte).
#[derive(Clone, Copy)]
struct Needle<'p> {
    word: &'p str,
    ascii: bool,
}

impl<'p> Needle<'p> {
    const EMPTY: Needle<'static> = Needle {
        word: "",
        ascii: true,
    };

    fn new(word: &'p str) -> Self {
        Self {
            word,
            ascii: word.is_ascii(),
        }
    }

    /// True when `lower` (a word of `words`) is this word lowercased.
    fn is_lowercase_of(&self, lower: &str) -> bool {
        if self.ascii {
            lower.len() == self.word.len()
                && lower
                    .bytes()
                    .zip(self.word.bytes())
                    .all(|(l, w)| l == w.to_ascii_lowercase())
        } else {
            lower == self.word.to_lowercase()
        }
    }
}

/// Words that carry no subject matter, left out when two texts are compared for content.
const STOPWORDS: [&str; 40] = [
    "the", "and", "for", "with", "that", "this", "from", "they", "them", "their", "your", "you",
    "our", "ours", "are", "was", "were", "have", "has", "had", "not", "but", "all", "any", "can",
    "will", "would", "into", "than", "then", "more", "most", "very", "just", "what", "when", "who",
    "why", "how", "about",
];

/// Content words of at least four letters, with a plural `s` dropped, for overlap tests.
pub fn content_words(s: &str) -> Vec<String> {
    words(s)
        .into_iter()
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| w.strip_suffix('s').map(str::to_owned).unwrap_or(w))
        .collect()
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

/// Every string leaf under `value` with its JSON pointer (below `at`), in document order.
pub fn strings<'a>(value: &'a Value, at: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(s) => out.push((at.to_owned(), s)),
        Value::Array(list) => {
            for (i, v) in list.iter().enumerate() {
                strings(v, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                strings(v, &format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
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

    #[test]
    fn phrases_match_whole_words_only() {
        assert!(has_phrase("Our close rate is low.", "close rate"));
        assert!(!has_phrase("separate", "rate"));
        assert!(has_phrase("Ça va BIEN, merci", "ÇA va"));
        assert!(has_phrase("Ça va BIEN, merci", "bien MERCI"));
        assert!(!has_phrase("Ça va BIEN, merci", "merci bien"));
        assert!(!has_phrase("Ça va", "ça va bien"));
        assert!(!has_phrase("Ça va", " ,, "));
        // Phrases longer than the six words kept on the stack take the other path.
        let long = "one two three four five six seven";
        assert!(has_phrase(&format!("zero {long} eight"), long));
        assert!(!has_phrase("one two three four five six eight", long));
        let hay = words("so we sell shoes to runners");
        assert_eq!(phrase_at(&hay, "We SELL"), Some(1..3));
        assert_eq!(phrase_at(&hay, "we buy"), None);
        assert_eq!(
            content_words("The leads and clients"),
            vec!["lead", "client"]
        );
    }
}
