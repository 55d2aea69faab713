//! Facts the caller states in their own messages, read as the `context` field they would fill
//! ("We make $42,000 a month, get 30 leads a month and close 20%" gives
//! `metrics.monthly_revenue_usd`, `metrics.leads_per_month` and `metrics.close_rate_pct`).
//!
//! Conservative by design: a statement counts only when it is unambiguous.
//! - Only `user` turns are read, one clause at a time (split at `.`, `;`, `,`, "and", "but").
//! - A clause that speaks of a plan or a wish ("want", "target", "would", "if", "thinking of"…)
//!   or of other businesses ("similar", "competitors", "industry", "typical"…) is skipped.
//! - A metric needs its figure, its kind (`$` for money, `%` for rates) and its words in the
//!   same clause, and monthly metrics need "a month", "per month", "monthly" or "/month".

mod fields;

use super::text::has_any;
use fields::{descriptive_fields, metric_fields};

/// Clause words that make a statement hypothetical or about someone else.
const SKIP: [&str; 27] = [
    "want",
    "wants",
    "target",
    "targets",
    "goal",
    "aim",
    "plan",
    "planning",
    "hope",
    "would",
    "could",
    "if",
    "will",
    "expect",
    "forecast",
    "thinking",
    "maybe",
    "might",
    "should",
    "similar",
    "competitor",
    "competitors",
    "industry",
    "typical",
    "typically",
    "usually",
    "benchmark",
];

/// The dotted context fields the user messages state, in no particular order.
pub fn stated_fields<'a>(messages: impl Iterator<Item = &'a str>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut add = |f: &'static str| {
        if !out.contains(&f) {
            out.push(f);
        }
    };
    for message in messages {
        let lower = message.to_lowercase();
        if lower.contains("http://") || lower.contains("https://") || lower.contains("www.") {
            add("company.website");
        }
        for clause in clauses(message) {
            if has_any(&clause.sentence, &SKIP) {
                continue;
            }
            let clause = clause.text;
            for f in metric_fields(&clause) {
                add(f);
            }
            for f in descriptive_fields(&clause) {
                add(f);
            }
        }
    }
    out
}

struct Clause {
    text: String,
    /// The whole sentence it belongs to: a wish or a comparison anywhere in it taints it all.
    sentence: String,
}

/// Clauses of a message: sentences split at `.`, `!`, `?`, `;` and line breaks, then at commas
/// outside numbers, "and" and "but".
fn clauses(message: &str) -> Vec<Clause> {
    let chars: Vec<char> = message.chars().collect();
    let mut sentences = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let digit_after = chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if matches!(c, '!' | '?' | ';' | '\n') || (c == '.' && !digit_after) {
            sentences.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    sentences.push(cur);
    let mut out = Vec::new();
    for sentence in sentences.into_iter().filter(|s| !s.trim().is_empty()) {
        let chars: Vec<char> = sentence.chars().collect();
        let mut part = String::new();
        let mut parts = Vec::new();
        for (i, &c) in chars.iter().enumerate() {
            let digit = |j: Option<usize>| {
                j.and_then(|j| chars.get(j))
                    .is_some_and(char::is_ascii_digit)
            };
            if c == ',' && !(digit(i.checked_sub(1)) && digit(Some(i + 1))) {
                parts.push(std::mem::take(&mut part));
            } else {
                part.push(c);
            }
        }
        parts.push(part);
        for p in parts {
            for q in p.split(" and ").flat_map(|q| q.split(" but ")) {
                if !q.trim().is_empty() {
                    out.push(Clause {
                        text: q.to_owned(),
                        sentence: sentence.clone(),
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
