//! Numeric literals in free text ("1,200", "$4,500", "12%", "3.5k", "1.2m"), where they stand,
//! and the rounding tolerance that decides whether two written figures are the same number.

use std::ops::Range;

/// One number as written in text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    pub value: f64,
    /// Half of the last written digit's step ("16.8" → 0.05, "3.5k" → 50, "17" → 0.5): a figure
    /// rounded for display still matches the exact number it came from.
    pub half_step: f64,
    /// Written with a trailing `%` (or the word "percent"), so 45% also matches 0.45.
    pub percent: bool,
    /// Written with a `$` in front (or "USD"/"dollars" after): money, never a unit constant.
    pub currency: bool,
}

impl Figure {
    pub fn exact(value: f64) -> Self {
        Self {
            value,
            half_step: 0.0,
            percent: false,
            currency: false,
        }
    }

    /// Neither money nor a rate: the only kind a unit constant may stand for.
    pub fn is_plain(&self) -> bool {
        !self.percent && !self.currency
    }

    /// Same number within the rounding either side may have applied.
    pub fn matches(&self, other: &Figure) -> bool {
        let tol = self.half_step.max(other.half_step);
        if close(self.value, other.value, tol) {
            return true;
        }
        // "45%" and "0.45" are the same rate; the tolerance scales with the side divided by 100.
        (self.percent && close(self.value / 100.0, other.value, tol / 100.0))
            || (other.percent && close(self.value, other.value / 100.0, tol / 100.0))
    }

    /// Same number to the last bit (either way round for a rate): the caller's own figure, not
    /// one that merely rounds to it.
    pub fn equals(&self, other: &Figure) -> bool {
        let eq = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        eq(self.value, other.value)
            || (self.percent && eq(self.value / 100.0, other.value))
            || (other.percent && eq(self.value, other.value / 100.0))
    }
}

pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol + 1e-9 * a.abs().max(b.abs())
}

/// A figure and the characters it was written with (char indices, sign and suffix included).
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub figure: Figure,
    pub chars: Range<usize>,
}

/// Every numeric literal in `text`, in order. Signs are ignored (a `-` is usually an operator or a
/// hyphen), digits glued to a preceding letter are not numbers ("Q4", "B2B", "H1"), commas count
/// only as thousands separators, and a `k`, `m` or `bn` suffix that ends the word scales the value.
pub fn extract(text: &str) -> Vec<Figure> {
    spans(text).into_iter().map(|s| s.figure).collect()
}

/// [`extract`] with the position of each figure, for readers that look at the words around it.
pub fn spans(text: &str) -> Vec<Span> {
    // Most texts of an answer hold no figure: they are not copied into characters at all.
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let glued = i > 0 && (chars[i - 1].is_alphabetic() || chars[i - 1] == '_');
        let (mut figure, next) = read_number(&chars, i);
        if !glued {
            let start = if i > 0 && chars[i - 1] == '$' {
                i - 1
            } else {
                i
            };
            figure.currency = start < i || money_word_after(&chars, next);
            out.push(Span {
                figure,
                chars: start..next,
            });
        }
        i = next.max(i + 1);
    }
    out
}

/// Reads the number starting at `start` (a digit); returns it and the index after it (past any
/// `%`).
fn read_number(chars: &[char], start: usize) -> (Figure, usize) {
    let digit = |j: usize| chars.get(j).is_some_and(|c| c.is_ascii_digit());
    let mut digits = String::new();
    let mut i = start;
    loop {
        while digit(i) {
            digits.push(chars[i]);
            i += 1;
        }
        // "1,200" but not "1,2" nor "1,2345" nor a list "3,4".
        let group = chars.get(i) == Some(&',') && (1..=3).all(|k| digit(i + k)) && !digit(i + 4);
        if group {
            i += 1;
        } else {
            break;
        }
    }
    let mut decimals = 0i32;
    if chars.get(i) == Some(&'.') && digit(i + 1) {
        digits.push('.');
        i += 1;
        while digit(i) {
            digits.push(chars[i]);
            decimals += 1;
            i += 1;
        }
    }
    let value: f64 = digits.parse().unwrap_or(0.0);
    let (scale, mut after) = suffix(chars, i);
    let mut percent = false;
    if chars.get(after) == Some(&'%') {
        percent = true;
        after += 1;
    } else if word_at(chars, after + 1).eq_ignore_ascii_case("percent")
        && chars.get(after) == Some(&' ')
    {
        percent = true;
    }
    let figure = Figure {
        value: value * scale,
        half_step: 0.5 * 10f64.powi(-decimals) * scale,
        percent,
        currency: false,
    };
    (figure, after)
}

/// A magnitude suffix directly after the digits that ends the word: "3.5k", "1.2m", "$2bn".
fn suffix(chars: &[char], i: usize) -> (f64, usize) {
    let ends_word = |j: usize| !chars.get(j).is_some_and(|c| c.is_alphanumeric());
    let lower = |j: usize| chars.get(j).map(|c| c.to_ascii_lowercase());
    match lower(i) {
        Some('k') if ends_word(i + 1) => (1e3, i + 1),
        Some('m') if ends_word(i + 1) => (1e6, i + 1),
        Some('b') if lower(i + 1) == Some('n') && ends_word(i + 2) => (1e9, i + 2),
        _ => (1.0, i),
    }
}

/// The alphabetic word starting at `i` ("" when none).
fn word_at(chars: &[char], i: usize) -> String {
    chars
        .iter()
        .skip(i)
        .take_while(|c| c.is_alphabetic())
        .collect()
}

fn money_word_after(chars: &[char], i: usize) -> bool {
    chars.get(i) == Some(&' ')
        && matches!(
            word_at(chars, i + 1).to_lowercase().as_str(),
            "usd" | "dollars" | "dollar"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<f64> {
        extract(text).iter().map(|f| f.value).collect()
    }

    #[test]
    fn reads_separators_currency_percent_and_magnitude_suffixes() {
        assert_eq!(
            values("$4,500 a month, 1,200 leads, 12% churn, 3.5k visits, $1.2M ARR, 2bn"),
            vec![4500.0, 1200.0, 12.0, 3500.0, 1_200_000.0, 2e9]
        );
        assert_eq!(
            values("12,000,000 and 1,2 and 3,4567"),
            vec![12_000_000.0, 1.0, 2.0, 3.0, 4567.0]
        );
        assert!(extract("12%")[0].percent);
        assert!(extract("a 12 percent rise")[0].percent);
        let f = extract("$4,500 and 300 USD and 7");
        assert_eq!(
            f.iter().map(|f| f.currency).collect::<Vec<_>>(),
            vec![true, true, false]
        );
    }

    #[test]
    fn spans_cover_the_sign_digits_and_percent() {
        let s = spans("pay $4,500 or 12% now");
        assert_eq!(s[0].chars, 4..10);
        assert_eq!(s[1].chars, 14..17);
    }

    #[test]
    fn ignores_digits_glued_to_letters_and_keeps_unit_words_apart() {
        assert_eq!(values("Q4 B2B H1 buyers"), Vec::<f64>::new());
        assert_eq!(
            values("12 months, 5min, 7.8x, day-10"),
            vec![12.0, 5.0, 7.8, 10.0]
        );
        assert_eq!(values("(690 - 590) / 690"), vec![690.0, 590.0, 690.0]);
    }

    #[test]
    fn rounded_figures_match_their_source_and_rates_match_fractions() {
        let f = |s: &str| extract(s)[0];
        assert!(f("17").matches(&f("16.8")));
        assert!(f("86.6").matches(&f("87")));
        assert!(f("6.7").matches(&Figure::exact(400.0 / 60.0)));
        assert!(!f("6.7").matches(&f("6.5")));
        assert!(f("45%").matches(&f("0.45")));
        assert!(f("3.5k").matches(&f("3,520")));
        assert!(!f("18").matches(&f("19")));
        assert!(f("45%").equals(&Figure::exact(45.0)));
        assert!(!f("17").equals(&f("16.8")));
    }
}
