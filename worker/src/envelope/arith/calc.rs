//! Interval arithmetic over the tokens of one calculation: every operand stands for every value
//! its written precision allows, so a result can be checked against what the figures permit.

use super::tokens::Tok;
use crate::envelope::figures::Figure;

/// What a known figure may stand for, in its written units: a point for the caller's figures
/// and unit constants, an earlier result's computed value together with its display.
pub type Lookup<'a> = &'a dyn Fn(&Figure) -> Option<Interval>;

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
        Self {
            lo: v,
            hi: v,
            nom: v,
        }
    }
    pub(super) fn around(v: f64, h: f64) -> Self {
        Self {
            lo: v - h,
            hi: v + h,
            nom: v,
        }
    }
    /// The smallest interval holding both.
    pub fn hull(self, o: Interval) -> Self {
        Self {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
            nom: self.nom,
        }
    }
    pub(super) fn scale(self, k: f64) -> Self {
        let (a, b) = (self.lo * k, self.hi * k);
        Self {
            lo: a.min(b),
            hi: a.max(b),
            nom: self.nom * k,
        }
    }
    pub(super) fn meets(self, o: Interval) -> bool {
        let eps = 1e-9
            * (self
                .lo
                .abs()
                .max(self.hi.abs())
                .max(o.lo.abs().max(o.hi.abs())));
        self.lo <= o.hi + eps && o.lo <= self.hi + eps
    }
}

/// A step's value: read with rates as fractions and, when every operand is a rate, in points.
#[derive(Clone, Copy, Debug)]
pub struct Value {
    pub frac: Interval,
    pub points: Option<Interval>,
}

/// An operand as a fraction when it is a rate (20% → 0.2).
pub(super) fn operand(f: &Figure, exact: Lookup) -> Interval {
    let i = operand_points(f, exact);
    if f.percent { i.scale(0.01) } else { i }
}

pub(super) fn operand_points(f: &Figure, exact: Lookup) -> Interval {
    exact(f).unwrap_or_else(|| shown(f))
}

/// Every value a written figure may stand for.
pub(super) fn shown(f: &Figure) -> Interval {
    Interval::around(f.value, f.half_step)
}

/// The computed value in the shown result's units (a percentage, or points), when they agree.
pub(super) fn in_units(shown_fig: &Figure, v: Value) -> Option<Interval> {
    let s = shown(shown_fig);
    let mut c = vec![v.frac];
    if shown_fig.percent {
        c.push(v.frac.scale(100.0));
    }
    c.extend(v.points);
    c.into_iter()
        .find(|i| s.meets(*i))
        .map(|i| i.hull(Interval::point(shown_fig.value)))
}

const NO_OPERATOR: &str = "must join every figure of the calculation with an operator (×, /, +, −)";

pub(super) fn parse(toks: &[Tok], exact: Lookup) -> Result<Value, String> {
    let all_rates = toks.iter().all(|t| !matches!(t, Tok::Num(f) if !f.percent));
    let mut p = Parser {
        toks,
        pos: 0,
        exact,
        points: false,
    };
    let frac = p.expr()?;
    if p.pos != toks.len() {
        return Err(NO_OPERATOR.into());
    }
    let points = if all_rates {
        let mut q = Parser {
            toks,
            pos: 0,
            exact,
            points: true,
        };
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
                Interval {
                    lo: acc.lo + r.lo,
                    hi: acc.hi + r.hi,
                    nom: acc.nom + r.nom,
                }
            } else {
                Interval {
                    lo: acc.lo - r.hi,
                    hi: acc.hi - r.lo,
                    nom: acc.nom - r.nom,
                }
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
                Ok(if self.points {
                    operand_points(&f, self.exact)
                } else {
                    operand(&f, self.exact)
                })
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
        return Ok(pick(
            [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi],
            a.nom * b.nom,
        ));
    }
    if b.lo <= 0.0 && b.hi >= 0.0 {
        return Err("divides by zero".into());
    }
    Ok(pick(
        [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi],
        a.nom / b.nom,
    ))
}
