//! Figures in prose (honesty rule 1): every figure in `reply`, `caveats`, `thinking.diagnosis`
//! and the deliverable's free text must be one the caller gave, one `numbers` shows or uses, a
//! number the deliverable types as its own recommendation (a price, a score, a day), or a stated
//! constant ([`stated`]). Two narrow allowances: a rate written next to its own count ("42% (21
//! of 50)"), and a figure the coach proposes, introduced by a target or threshold word ("aim for
//! 60%", "when leads pass 60 a month") in a clause that does not call it a benchmark. Fields that
//! exist to hold the coach's own proposals (targets, triggers, the steps of a procedure) are
//! named per mode and left out.

use super::figures::{self, Figure, Span};
use super::stated;
use super::text;
use grove_common::schema::Violation;

/// Words that introduce a figure as the coach's proposal, when they come within four words
/// before it in the same clause.
const PROPOSAL_CUES: [&str; 39] = [
    "aim for",
    "aim",
    "target",
    "targets",
    "goal",
    "at least",
    "at most",
    "no more than",
    "no less than",
    "fewer than",
    "more than",
    "less than",
    "under",
    "below",
    "above",
    "over",
    "exceed",
    "exceeds",
    "pass",
    "passes",
    "reach",
    "reaches",
    "hit",
    "hits",
    "cap",
    "capped at",
    "charge",
    "charging",
    "priced at",
    "price it at",
    "set",
    "raise",
    "raising",
    "lower",
    "budget",
    "limit",
    "up to",
    "within",
    "recommend",
];

/// Words that present a figure as a fact about other businesses: never a proposal. ("at most"
/// is a cue, not a benchmark: it is removed before the clause is read.)
const BENCHMARK_WORDS: [&str; 23] = [
    "usually",
    "typically",
    "typical",
    "industry",
    "benchmark",
    "benchmarks",
    "on average",
    "most",
    "many",
    "firms like",
    "businesses like",
    "companies like",
    "others",
    "competitor",
    "competitors",
    "peers",
    "rivals",
    "studies",
    "research",
    "data shows",
    "statistically",
    "the norm",
    "median",
];

/// What prose may cite: the caller's figures, every figure `numbers` shows or uses, and (for
/// non-rates only) the numbers the deliverable types as recommendations.
pub struct Pool<'a> {
    pub cited: &'a [Figure],
    pub typed: &'a [Figure],
}

impl Pool<'_> {
    fn has(&self, f: &Figure) -> bool {
        let loose = rounded(f);
        self.cited.iter().any(|k| k.matches(&loose))
            || (!f.percent && self.typed.iter().any(|k| k.matches(f)))
    }
}

/// A large whole figure written with trailing zeros may be rounded to two significant digits in
/// prose ("about $2,500" for $2,503); anything else keeps its written precision.
fn rounded(f: &Figure) -> Figure {
    let mut out = *f;
    let v = f.value;
    if v.fract() != 0.0 || v.abs() < 1000.0 || f.half_step != 0.5 {
        return out;
    }
    let digits = (v.abs().log10().floor() as i32) + 1;
    let mut place = 1.0;
    while (v / (place * 10.0)).fract() == 0.0 && (place * 10.0).log10() as i32 <= digits - 2 {
        place *= 10.0;
    }
    out.half_step = out.half_step.max(place / 2.0);
    out
}

/// Violations for each untraced figure of `text` at `pointer`. With `proposals`, a figure the
/// coach introduces as a target or threshold passes; without, every figure must trace.
pub fn check(pointer: &str, text: &str, pool: &Pool, proposals: bool, out: &mut Vec<Violation>) {
    let chars: Vec<char> = text.chars().collect();
    let spans = figures::spans(text);
    let ratios = ratios(&chars, &spans);
    for span in &spans {
        let f = &span.figure;
        if pool.has(f) || stated::is_stated(&chars, span, !proposals) {
            continue;
        }
        if f.percent && ratios.iter().any(|r| Figure::exact(*r * 100.0).matches(f)) {
            continue;
        }
        if proposals && proposal(&chars, span) {
            continue;
        }
        let written: String = chars[span.chars.clone()].iter().collect();
        text::push(
            out,
            pointer,
            format!(
                "{written} is not a figure the caller gave or one `numbers` shows: remove it, or \
                 add its calculation from the caller's figures to `numbers`"
            ),
        );
    }
}

/// "21 of 50", "1 in 4", "9 out of 14": the ratio each such pair states.
pub fn ratios(chars: &[char], spans: &[Span]) -> Vec<f64> {
    spans
        .windows(2)
        .filter_map(|w| {
            let gap: String = chars[w[0].chars.end..w[1].chars.start].iter().collect();
            let gap = gap.trim().to_lowercase();
            let joined = ["of", "in", "out of"].contains(&gap.as_str());
            (joined && w[1].figure.value != 0.0).then(|| w[0].figure.value / w[1].figure.value)
        })
        .collect()
}

/// The figure is introduced by a proposal cue in a clause without benchmark words.
fn proposal(chars: &[char], span: &Span) -> bool {
    let (start, end) = clause(chars, span.chars.start);
    let clause: String = chars[start..end].iter().collect::<String>().to_lowercase();
    if text::has_any(&clause.replace("at most", " "), &BENCHMARK_WORDS) {
        return false;
    }
    let before: String = chars[start..span.chars.start].iter().collect();
    let words = text::words(&before);
    let tail = &words[words.len().saturating_sub(4)..];
    PROPOSAL_CUES
        .iter()
        .any(|cue| text::holds_phrase(tail, cue))
}

/// The clause around char `at`: bounded by sentence ends, `;`, `:`, brackets, dashes, line
/// breaks and commas that do not sit inside a number.
fn clause(chars: &[char], at: usize) -> (usize, usize) {
    let boundary = |i: usize| {
        let c = chars[i];
        let digit = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(char::is_ascii_digit)
        };
        match c {
            ';' | ':' | '!' | '?' | '\n' | '(' | ')' | '—' => true,
            ',' => !(digit(i.checked_sub(1)) && digit(Some(i + 1))),
            '.' => chars.get(i + 1).is_none_or(|n| n.is_whitespace()),
            '–' | '-' => i > 0 && chars[i - 1] == ' ' && chars.get(i + 1) == Some(&' '),
            _ => false,
        }
    };
    let start = (0..at).rev().find(|&i| boundary(i)).map_or(0, |i| i + 1);
    let end = (at..chars.len())
        .find(|&i| boundary(i))
        .unwrap_or(chars.len());
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flagged(text: &str, cited: &str) -> Vec<String> {
        let cited = figures::extract(cited);
        let typed = [Figure::exact(650.0)];
        let pool = Pool {
            cited: &cited,
            typed: &typed,
        };
        let mut out = Vec::new();
        check("/reply", text, &pool, true, &mut out);
        out.into_iter()
            .map(|v| v.message.split(' ').next().unwrap_or("").to_owned())
            .collect()
    }

    #[test]
    fn an_invented_benchmark_is_refused_and_caller_figures_pass() {
        let cited = "30 leads, close 20%, $42,000 a month, 6";
        assert_eq!(
            flagged("Firms like yours usually close 47% of leads.", cited),
            vec!["47%"]
        );
        assert_eq!(
            flagged(
                "You close 20% of 30 leads, about 6 clients, on $42k a month.",
                cited
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn rounded_results_ratios_constants_and_typed_recommendations_pass() {
        let cited = "$2,503 and 16.8";
        assert_eq!(
            flagged(
                "About $2,500 a month, 17 members, 42% (21 of 50) in 2025, by day 14, a $650 package.",
                cited
            ),
            vec!["21", "50"],
            "the pair itself must trace"
        );
        assert_eq!(flagged("About $2,400 a month.", cited), vec!["$2,400"]);
        assert_eq!(flagged("Raise it to 650%.", ""), Vec::<String>::new());
        assert_eq!(flagged("We saw 650%.", ""), vec!["650%"]);
    }

    #[test]
    fn proposals_need_a_cue_and_no_benchmark_in_their_clause() {
        assert_eq!(
            flagged("Aim for a 60% show rate.", ""),
            Vec::<String>::new()
        );
        assert_eq!(
            flagged("Add a crew when leads pass 60 a month.", ""),
            Vec::<String>::new()
        );
        assert_eq!(
            flagged("Aim for 60%, the industry average.", ""),
            Vec::<String>::new(),
            "the benchmark is in another clause"
        );
        assert_eq!(
            flagged("Aim for the industry average of 60%.", ""),
            vec!["60%"]
        );
        assert_eq!(flagged("Your show rate is 60%.", ""), vec!["60%"]);
        assert_eq!(
            flagged("Most trainers charge $75 a session.", ""),
            vec!["$75"]
        );
        assert_eq!(
            flagged("Charge at most $75 a session.", ""),
            Vec::<String>::new()
        );
    }

    #[test]
    fn odd_text_never_panics() {
        for text in [
            "", "1", "$", "9am", "24/7", "10:", ":30", "½", "🎯 5%", "1,", "—-—", "day-",
        ] {
            flagged(text, "1");
        }
    }
}
