//! Words as the rules compare them: whole-word phrases, content words, loose equality. Shared by
//! the modes' rules (here, in `common`) and the worker's figure and prose checks.

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

#[cfg(test)]
mod tests {
    use super::*;

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
