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

use super::figures::{self, Figure, Span};

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

const DURATION_UNITS: [&str; 14] = [
    "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours", "minute",
    "minutes", "quarter", "quarters",
];

/// What a basis with at least one `=` says, once evaluated.
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

/// A computed quantity: every value the written figures allow (`lo..=hi`) and the value the
/// figures give as written (`nom`, for messages).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    pub nom: f64,
}

impl Interval {
    pub fn point(v: f64) -> Self {
        Self { lo: v, hi: v, nom: v }
    }
    fn around(v: f64, h: f64) -> Self {
        Self { lo: v - h, hi: v + h, nom: v }
    }
    /// The smallest interval holding both.
    pub fn hull(self, o: Interval) -> Self {
        Self { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi), nom: self.nom }
    }
    fn scale(self, k: f64) -> Self {
        let (a, b) = (self.lo * k, self.hi * k);
        Self {
            lo: a.min(b),
            hi: a.max(b),
            nom: self.nom * k,
        }
    }
    fn meets(self, o: Interval) -> bool {
        let eps = 1e-9 * (self.lo.abs().max(self.hi.abs()).max(o.lo.abs().max(o.hi.abs())));
        self.lo <= o.hi + eps && o.lo <= self.hi + eps
    }
}

/// A step's value: read with rates as fractions and, when every operand is a rate, in points.
#[derive(Clone, Copy, Debug)]
struct Value {
    frac: Interval,
    points: Option<Interval>,
}

/// What a known figure may stand for, in its written units: a point for the caller's figures
/// and unit constants, an earlier result's computed value together with its display.
pub type Lookup<'a> = &'a dyn Fn(&Figure) -> Option<Interval>;

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
                chain.faults.push("has an `=` with no result after it".into());
                return chain;
            };
            let approx = *approx_sep || approx_before(text, head);
            match prev {
                Some((value, single)) => {
                    let units = in_units(&head.figure, value);
                    chain.results.push((head.figure, units.unwrap_or_else(|| shown(&head.figure))));
                    if !agrees(&head.figure, approx, value)
                        && !(single && rest_is_single(s, last, rest) && converts(&head.figure, value))
                    {
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
        chain.operands.extend(used.iter().skip(usize::from(s > 0)).copied());
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
    APPROX.iter().any(|w| lower.split_whitespace().any(|t| t == *w)) || before.contains('~')
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
        s.meets(c) || (shown.percent && s.scale(0.01).meets(c)) || (shown.percent && s.meets(c.scale(100.0)))
    })
}

fn converts(shown: &Figure, v: Value) -> bool {
    CONVERSIONS.iter().any(|&c| {
        let up = Value { frac: v.frac.scale(c), points: None };
        let down = Value { frac: v.frac.scale(1.0 / c), points: None };
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Num(Figure),
    Op(char),
    Open,
    Close,
}

/// Tokens of one segment; the figures used as operands; the figures dropped as qualifiers.
fn tokenize(text: &str, spans: &[Span]) -> (Vec<Tok>, Vec<Figure>, Vec<Figure>) {
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
    let w = s.trim_start_matches(['-', ' ']).split(|c: char| !c.is_alphabetic()).next()?;
    (!w.is_empty()).then(|| w.to_lowercase())
}

/// Operators and brackets in the text before, between or after figures; operator words count
/// only between two figures.
fn gap_tokens(gap: &[char], at_start: bool, between: bool, after_percent: bool, toks: &mut Vec<Tok>) {
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
        let ws: Vec<&str> = text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).collect();
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

fn operand(f: &Figure, exact: Lookup) -> Interval {
    let i = operand_points(f, exact);
    if f.percent { i.scale(0.01) } else { i }
}

fn operand_points(f: &Figure, exact: Lookup) -> Interval {
    exact(f).unwrap_or_else(|| shown(f))
}

/// Every value a written figure may stand for.
fn shown(f: &Figure) -> Interval {
    Interval::around(f.value, f.half_step)
}

/// The computed value in the shown result's units (a percentage, or points), when they agree.
fn in_units(shown_fig: &Figure, v: Value) -> Option<Interval> {
    let s = shown(shown_fig);
    let mut c = vec![v.frac];
    if shown_fig.percent {
        c.push(v.frac.scale(100.0));
    }
    c.extend(v.points);
    c.into_iter().find(|i| s.meets(*i)).map(|i| i.hull(Interval::point(shown_fig.value)))
}

const NO_OPERATOR: &str =
    "must join every figure of the calculation with an operator (×, /, +, −)";

fn parse(toks: &[Tok], exact: Lookup) -> Result<Value, String> {
    let all_rates = toks.iter().all(|t| !matches!(t, Tok::Num(f) if !f.percent));
    let mut p = Parser { toks, pos: 0, exact, points: false };
    let frac = p.expr()?;
    if p.pos != toks.len() {
        return Err(NO_OPERATOR.into());
    }
    let points = if all_rates {
        let mut q = Parser { toks, pos: 0, exact, points: true };
        q.expr().ok()
    } else {
        None
    };
    Ok(Value { frac, points })
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    exact: Lookup<'a>,
    points: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<Interval, String> {
        let mut acc = self.term()?;
        while let Some(Tok::Op(op @ ('+' | '-'))) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            acc = if op == '+' {
                Interval { lo: acc.lo + r.lo, hi: acc.hi + r.hi, nom: acc.nom + r.nom }
            } else {
                Interval { lo: acc.lo - r.hi, hi: acc.hi - r.lo, nom: acc.nom - r.nom }
            };
        }
        Ok(acc)
    }

    fn term(&mut self) -> Result<Interval, String> {
        let mut acc = self.unary()?;
        loop {
            match self.peek() {
                Some(Tok::Op(op @ ('*' | '/'))) => {
                    self.pos += 1;
                    let r = self.unary()?;
                    acc = combine(acc, r, op)?;
                }
                Some(Tok::Num(_) | Tok::Open) => return Err(NO_OPERATOR.into()),
                _ => return Ok(acc),
            }
        }
    }

    fn unary(&mut self) -> Result<Interval, String> {
        if let Some(Tok::Op('-')) = self.peek() {
            self.pos += 1;
            return Ok(self.unary()?.scale(-1.0));
        }
        match self.peek() {
            Some(Tok::Num(f)) => {
                self.pos += 1;
                Ok(if self.points { operand_points(&f, self.exact) } else { operand(&f, self.exact) })
            }
            Some(Tok::Open) => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(Tok::Close) {
                    return Err("has an unclosed bracket".into());
                }
                self.pos += 1;
                Ok(v)
            }
            _ => Err("has an operator without a figure on each side".into()),
        }
    }
}

fn combine(a: Interval, b: Interval, op: char) -> Result<Interval, String> {
    let pick = |xs: [f64; 4], nom: f64| Interval {
        lo: xs.iter().copied().fold(f64::INFINITY, f64::min),
        hi: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        nom,
    };
    if op == '*' {
        return Ok(pick([a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi], a.nom * b.nom));
    }
    if b.lo <= 0.0 && b.hi >= 0.0 {
        return Err("divides by zero".into());
    }
    Ok(pick([a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi], a.nom / b.nom))
}

#[cfg(test)]
mod tests;
