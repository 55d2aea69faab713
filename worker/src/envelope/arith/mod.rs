//! Evaluates a `numbers[].basis` ("20 leads × 45% close rate = 9 new clients") and says whether
//! each shown result is what the calculation gives, to the precision it is written with.
//!
//! Reading rules: figures are read by [`figures::spans`]; `×`, `x` between spaces, `*`, `/` (not
//! "/month"), `÷`, `+`, `−` and a spaced `-` are operators, as are the words "times", "plus",
//! "minus", "divided by", "at" ("9 clients at $500") and "of" after a rate ("20% of 30"); other
//! words are labels. A rate multiplies as a fraction (20% → 0.2); a calculation on rates alone
//! may also be read in points ("45% − 40% = 5 points"). A figure after "over", "within", "in",
//! "for", "after", "past" or "last" that names a duration ("$38,000 over 30 days") qualifies the
//! figure before it and is not an operand. Every operand counts with the rounding it is written
//! with unless it is exactly a figure we know, so a rounded earlier result may be reused.

mod calc;
mod tokens;

pub use calc::{Interval, Lookup};

use super::figures::{self, Figure, Span};
use calc::{Value, in_units, operand, operand_points, parse, shown};
use tokens::tokenize;

/// Conversions allowed between two single-figure steps ("400 minutes = 6.7 hours").
const CONVERSIONS: [f64; 11] = [
    60.0, 24.0, 7.0, 12.0, 52.0, 4.33, 4.345, 365.0, 30.0, 100.0, 1000.0,
];

/// Words before a result that mark it as rounded on purpose ("= about 17").
const APPROX: [&str; 8] = [
    "about",
    "approximately",
    "approx",
    "roughly",
    "around",
    "nearly",
    "almost",
    "~",
];

#[derive(Debug, Default)]
pub struct Chain {
    /// Figures the calculation is built from: each must trace to something known.
    pub operands: Vec<Figure>,
    /// The shown result of each step, in order (the first figure after each `=`), with the
    /// value its calculation gives in the result's own units.
    pub results: Vec<(Figure, Interval)>,
    /// Results with no calculation before them ("monthly price = $149"): they must be known.
    pub restated: Vec<Figure>,
    /// Figures after the final result ("= 16.8, about 17", "= 4 of 7").
    pub trailing: Vec<Figure>,
    /// What is wrong with the calculation itself, as rule text.
    pub faults: Vec<String>,
}

/// Evaluates `basis`; `lookup` gives the exact value of a figure we know, which then counts
/// without the rounding slack of its written precision.
pub fn evaluate(basis: &str, exact: Lookup) -> Chain {
    let mut chain = Chain::default();
    let segments = split(basis);
    let last = segments.len() - 1;
    let mut prev: Option<(Value, bool)> = None; // value, and whether it was a single figure
    for (s, (text, approx_sep)) in segments.iter().enumerate() {
        let spans = figures::spans(text);
        let mut expr_spans: &[Span] = &spans;
        if s > 0 {
            let Some((head, rest)) = spans.split_first() else {
                chain
                    .faults
                    .push("has an `=` with no result after it".into());
                return chain;
            };
            let approx = *approx_sep || approx_before(text, head);
            match prev {
                Some((value, single)) => {
                    let units = in_units(&head.figure, value);
                    chain
                        .results
                        .push((head.figure, units.unwrap_or_else(|| shown(&head.figure))));
                    let converted =
                        single && rest_is_single(s, last, rest) && converts(&head.figure, value);
                    if !(agrees(&head.figure, approx, value) || converted) {
                        chain.faults.push(format!(
                            "{} is not what the calculation gives ({})",
                            show(&head.figure),
                            show_value(value, &head.figure)
                        ));
                    }
                }
                None => chain.restated.push(head.figure),
            }
            if s == last {
                chain.trailing.extend(rest.iter().map(|r| r.figure));
                break;
            }
            if rest.is_empty() {
                prev = Some((single_value(&head.figure, exact), true));
                continue;
            }
            expr_spans = &spans;
        }
        if expr_spans.is_empty() {
            prev = None;
            continue;
        }
        let (tokens, used, dropped) = tokenize(text, expr_spans);
        chain
            .operands
            .extend(used.iter().skip(usize::from(s > 0)).copied());
        chain.operands.extend(dropped);
        match parse(&tokens, exact) {
            Ok(v) => prev = Some((v, used.len() == 1)),
            Err(fault) => {
                chain.faults.push(fault);
                return chain;
            }
        }
    }
    chain
}

/// The parts between `=` / `≈`, each with whether it follows a `≈`.
fn split(basis: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut approx = false;
    for (i, c) in basis.char_indices() {
        if c == '=' || c == '≈' {
            out.push((&basis[start..i], approx));
            approx = c == '≈';
            start = i + c.len_utf8();
        }
    }
    out.push((&basis[start..], approx));
    out
}

fn rest_is_single(s: usize, last: usize, rest: &[Span]) -> bool {
    s == last || rest.is_empty()
}

fn approx_before(text: &str, head: &Span) -> bool {
    let before: String = text.chars().take(head.chars.start).collect();
    let lower = before.to_lowercase();
    APPROX
        .iter()
        .any(|w| lower.split_whitespace().any(|t| t == *w))
        || before.contains('~')
}

fn single_value(f: &Figure, exact: Lookup) -> Value {
    let i = operand(f, exact);
    Value {
        frac: i,
        points: f.percent.then(|| operand_points(f, exact)),
    }
}

/// A shown result agrees with a computed value when their intervals meet; a rate may be shown
/// as a percentage of a fraction or as the points the calculation produced.
fn agrees(shown: &Figure, approx: bool, v: Value) -> bool {
    let mut h = shown.half_step;
    if approx && shown.value.fract() == 0.0 && shown.value != 0.0 {
        let mut place = 1.0;
        while (shown.value / (place * 10.0)).fract() == 0.0 && place < 1e9 {
            place *= 10.0;
        }
        h = h.max(place / 2.0);
    }
    let s = Interval::around(shown.value, h);
    let candidates = [Some(v.frac), v.points].into_iter().flatten();
    candidates.into_iter().any(|c| {
        s.meets(c)
            || (shown.percent && s.scale(0.01).meets(c))
            || (shown.percent && s.meets(c.scale(100.0)))
    })
}

fn converts(shown: &Figure, v: Value) -> bool {
    CONVERSIONS.iter().any(|&c| {
        let up = Value {
            frac: v.frac.scale(c),
            points: None,
        };
        let down = Value {
            frac: v.frac.scale(1.0 / c),
            points: None,
        };
        agrees(shown, false, up) || agrees(shown, false, down)
    })
}

fn show(f: &Figure) -> String {
    let s = number(f.value);
    if f.percent { format!("{s}%") } else { s }
}

fn show_value(v: Value, shown: &Figure) -> String {
    let x = v.frac.nom;
    if shown.percent && x.abs() < 10.0 {
        format!("{}%", number(x * 100.0))
    } else {
        number(x)
    }
}

/// A number for messages: up to three decimals, no trailing zeros.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

#[cfg(test)]
mod tests;
