//! From the text of one calculation to tokens: figures, operators and brackets.

use crate::envelope::figures::{Figure, Span};

const DURATION_UNITS: [&str; 14] = [
    "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours", "minute",
    "minutes", "quarter", "quarters",
];

/// What a basis with at least one `=` says, once evaluated.

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Tok {
    Num(Figure),
    Op(char),
    Open,
    Close,
}

/// Tokens of one segment; the figures used as operands; the figures dropped as qualifiers.
pub(super) fn tokenize(text: &str, spans: &[Span]) -> (Vec<Tok>, Vec<Figure>, Vec<Figure>) {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut used = Vec::new();
    let mut dropped = Vec::new();
    let mut from = 0;
    let mut prev_percent = false;
    for (k, span) in spans.iter().enumerate() {
        let gap = &chars[from..span.chars.start];
        gap_tokens(gap, k == 0, k > 0, prev_percent, &mut toks);
        let qualifier = k > 0
            && last_word(gap).is_some_and(|w| {
                ["over", "within", "in", "for", "after", "past", "last"].contains(&w.as_str())
            })
            && next_word(&chars, span.chars.end)
                .is_some_and(|w| DURATION_UNITS.contains(&w.as_str()));
        if qualifier {
            dropped.push(span.figure);
        } else {
            toks.push(Tok::Num(span.figure));
            used.push(span.figure);
        }
        prev_percent = span.figure.percent;
        from = span.chars.end;
    }
    gap_tokens(&chars[from..], false, false, prev_percent, &mut toks);
    (toks, used, dropped)
}

fn last_word(gap: &[char]) -> Option<String> {
    let s: String = gap.iter().collect();
    s.split_whitespace().last().map(str::to_lowercase)
}

fn next_word(chars: &[char], from: usize) -> Option<String> {
    let s: String = chars[from.min(chars.len())..].iter().collect();
    let w = s
        .trim_start_matches(['-', ' '])
        .split(|c: char| !c.is_alphabetic())
        .next()?;
    (!w.is_empty()).then(|| w.to_lowercase())
}

/// Operators and brackets in the text before, between or after figures; operator words count
/// only between two figures.
fn gap_tokens(
    gap: &[char],
    at_start: bool,
    between: bool,
    after_percent: bool,
    toks: &mut Vec<Tok>,
) {
    let n = toks.len();
    let space = |j: Option<usize>| j.and_then(|j| gap.get(j)).is_none_or(|c| c.is_whitespace());
    let mut i = 0;
    while i < gap.len() {
        let c = gap[i];
        let before = i.checked_sub(1);
        let spaced_before = if i == 0 { at_start } else { space(before) };
        match c {
            '(' => toks.push(Tok::Open),
            ')' => toks.push(Tok::Close),
            '×' | '*' | '÷' | '+' | '−' => toks.push(Tok::Op(op_of(c))),
            '/' if !gap.get(i + 1).is_some_and(|n| n.is_alphabetic()) => toks.push(Tok::Op('/')),
            '-' | '–' => {
                let next = gap.get(i + 1);
                let spaced_after = next.is_none_or(|n| n.is_whitespace() || *n == '$' || *n == '(');
                let open_before = i > 0 && gap[i - 1] == '(';
                if (spaced_before || open_before) && spaced_after {
                    toks.push(Tok::Op('-'));
                }
            }
            'x' | 'X' if i > 0 && space(before) && space(Some(i + 1)) => toks.push(Tok::Op('*')),
            _ => {}
        }
        i += 1;
    }
    if toks.len() == n && between {
        // No symbol: an operator word, if any ("9 clients at $500", "20% of 30 leads").
        let text: String = gap.iter().collect::<String>().to_lowercase();
        let ws: Vec<&str> = text
            .split(|c: char| !c.is_alphabetic())
            .filter(|w| !w.is_empty())
            .collect();
        let has = |w: &str| ws.contains(&w);
        let op = if has("times") || has("at") || (after_percent && ws.first() == Some(&"of")) {
            Some('*')
        } else if text.contains("divided by") {
            Some('/')
        } else if has("plus") {
            Some('+')
        } else if has("minus") {
            Some('-')
        } else {
            None
        };
        toks.extend(op.map(Tok::Op));
    }
}

fn op_of(c: char) -> char {
    match c {
        '×' | '*' => '*',
        '÷' => '/',
        '−' => '-',
        other => other,
    }
}
