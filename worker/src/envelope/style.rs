//! The reply's form (honesty rule 7, spec 2.4–2.5): it starts with the answer, is plain prose,
//! keeps doubt in `caveats`, and stays near the tier's word target.

use super::text::{holds_phrase, push, word_count, words};
use grove_common::catalog::EnvelopeCaps;
use grove_common::schema::Violation;
use std::sync::LazyLock;

/// How far a reply may run past its tier's word target ("under 150 words"): 10 %, so 165, 275
/// and 330 words are the hard bounds. The character cap of spec 2.5 is checked separately.
pub const WORD_TOLERANCE: f64 = 0.10;

/// Openings that are preamble rather than the answer.
const PREAMBLES: [&str; 26] = [
    "hi",
    "hello",
    "hey",
    "dear",
    "great question",
    "good question",
    "thanks",
    "thank you",
    "sure",
    "certainly",
    "absolutely",
    "of course",
    "happy to",
    "i'd be happy",
    "i would be happy",
    "i'm happy",
    "let me",
    "let's dive",
    "here is",
    "here's",
    "okay",
    "ok",
    "as your coach",
    "as a coach",
    "you asked",
    "to answer your question",
];

/// Each preamble split as a reply is (`words`), once.
static PREAMBLE_WORDS: LazyLock<Vec<Vec<String>>> =
    LazyLock::new(|| PREAMBLES.iter().map(|p| words(p)).collect());

/// Phrases of doubt that belong in `caveats`, not the reply.
const HEDGES: [&str; 9] = [
    "i think",
    "i believe",
    "i'm not sure",
    "i am not sure",
    "not entirely sure",
    "perhaps",
    "it seems",
    "hard to say",
    "i suspect",
];

pub fn reply(caps: &EnvelopeCaps, reply: &str, out: &mut Vec<Violation>) {
    let reply_words = words(reply);
    // A preamble is the reply's first words (each preamble is at most five words long).
    let preamble = PREAMBLE_WORDS.iter().position(|p| {
        reply_words.len() >= p.len() && reply_words.iter().zip(p).all(|(r, w)| r == w)
    });
    if let Some(p) = preamble.map(|i| PREAMBLES[i]) {
        push(
            out,
            "/reply",
            format!("must start with the answer, not a preamble (\"{p}…\")"),
        );
    }
    if let Some(mark) = markdown(reply) {
        push(
            out,
            "/reply",
            format!("must be plain prose without markdown ({mark})"),
        );
    }
    if let Some(h) = HEDGES.iter().find(|h| holds_phrase(&reply_words, h)) {
        push(
            out,
            "/reply",
            format!("must speak plainly: doubt (\"{h}\") belongs in caveats"),
        );
    }
    let n = word_count(reply);
    let bound = (caps.reply_word_target as f64 * (1.0 + WORD_TOLERANCE)).floor() as usize;
    if n > bound {
        push(
            out,
            "/reply",
            format!(
                "must stay near {} words (at most {bound}), has {n}",
                caps.reply_word_target
            ),
        );
    }
}

/// The first markdown construct in a reply: heading, list item, table row, emphasis, link, code.
fn markdown(s: &str) -> Option<&'static str> {
    for line in s.lines().map(str::trim_start) {
        if line.starts_with('#') {
            return Some("a heading");
        }
        if line.starts_with("- ") || line.starts_with("* ") || line.starts_with('•') {
            return Some("a bullet list");
        }
        if line.starts_with('|') {
            return Some("a table");
        }
        let numbered = line.split_once(['.', ')']).is_some_and(|(n, rest)| {
            !n.is_empty()
                && n.len() <= 2
                && n.chars().all(|c| c.is_ascii_digit())
                && rest.starts_with(' ')
        });
        if numbered {
            return Some("a numbered list");
        }
    }
    if s.contains("**") || s.contains("__") {
        return Some("bold");
    }
    if s.contains("](") {
        return Some("a link");
    }
    if s.contains('`') {
        return Some("a code span");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::catalog::Tier;

    fn flags(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        reply(&Tier::Short.caps(), text, &mut out);
        out.into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn preamble_markdown_and_hedges_are_refused() {
        assert!(flags("Great question! Your constraint is retention.")[0].contains("preamble"));
        assert!(flags("Sure, here goes.")[0].contains("preamble"));
        assert!(flags("Your constraint:\n- retention")[0].contains("bullet"));
        assert!(flags("1. Fix churn")[0].contains("numbered"));
        assert!(flags("## Answer\nRetention.")[0].contains("heading"));
        assert!(flags("Fix **churn** first.")[0].contains("bold"));
        assert!(flags("I think churn is the problem.")[0].contains("caveats"));
        assert_eq!(
            flags("Your constraint is retention. Hire later."),
            Vec::<String>::new()
        );
        assert_eq!(flags("Okayama clients stay longer."), Vec::<String>::new());
        assert_eq!(
            flags("It costs $3.50. Then 2.5 hours."),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_word_target_is_a_bound_with_ten_percent_tolerance() {
        assert_eq!(flags(&"word ".repeat(165)), Vec::<String>::new());
        assert!(flags(&"word ".repeat(166))[0].contains("at most 165"));
    }
}
