//! Every `numbers[]` item must trace to the caller: its `basis` is a one-line calculation whose
//! operands are the caller's figures, results of earlier items, or common constants, and whose
//! result is the figure shown in `value` (spec 2.4; llm.md §5.3 "number provenance").

use super::figures::{self, Figure};
use grove_common::schema::Violation;
use serde_json::Value;

/// Unit conversions a calculation may use without the caller stating them: counts, days, weeks,
/// months, hours, percent and thousands, plus minutes per hour and weeks per month (4.33).
const CONSTANTS: [f64; 15] = [
    1.0, 2.0, 3.0, 4.0, 7.0, 12.0, 24.0, 30.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 4.33, 4.345,
];

/// Violations for every `numbers[]` item whose figures do not trace to `caller` figures.
/// Items are read in order, so an item may build on the results of the items before it.
pub fn check_numbers(numbers: &Value, caller: &[Figure]) -> Vec<Violation> {
    let mut known: Vec<Figure> = caller.to_vec();
    known.extend(CONSTANTS.iter().map(|&c| Figure::exact(c)));
    let mut out = Vec::new();
    let items = numbers.as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let basis = item.get("basis").and_then(Value::as_str).unwrap_or("");
        let value = item.get("value").and_then(Value::as_str).unwrap_or("");
        let traced = trace(basis, &known);
        let at = |field: &str| format!("/numbers/{i}/{field}");
        for unknown in &traced.unknown {
            out.push(Violation::new(
                at("basis"),
                format!(
                    "{} is not a figure the caller gave, a result of an earlier item, or a common \
                     constant",
                    display(unknown)
                ),
            ));
        }
        let shown = figures::extract(value);
        match shown.split_first() {
            None => {}
            Some((head, rest)) => {
                // Without an `=`, the item restates a figure: it must be one we already know.
                let pool: &[Figure] = if traced.has_equals {
                    &traced.results
                } else {
                    &known
                };
                if !pool.iter().any(|r| r.matches(head)) {
                    out.push(Violation::new(
                        at("value"),
                        if traced.has_equals {
                            format!("{} must be the result of basis", display(head))
                        } else {
                            format!(
                                "{} is not the caller's figure; basis must show the calculation \
                                 ending \"= {}\"",
                                display(head),
                                display(head)
                            )
                        },
                    ));
                }
                for extra in rest {
                    let ok = traced
                        .results
                        .iter()
                        .chain(&known)
                        .any(|r| r.matches(extra));
                    if !ok {
                        out.push(Violation::new(
                            at("value"),
                            format!("{} does not appear in basis", display(extra)),
                        ));
                    }
                }
            }
        }
        known.extend(traced.results);
        known.extend(shown);
    }
    out
}

struct Traced {
    /// Operands that match nothing known.
    unknown: Vec<Figure>,
    /// Figures the calculation produces: the first figure after each `=`, and everything after
    /// the last `=` ("= 16.8, about 17"). Without any `=`, the basis restates known figures.
    results: Vec<Figure>,
    has_equals: bool,
}

/// Splits `basis` at each `=` (or `≈`). Operands are the figures left of the final `=`, except
/// that the first figure after an intermediate `=` is that step's result ("40 × 10 minutes =
/// 400 minutes = 6.7 hours"), which later steps may use.
fn trace(basis: &str, known: &[Figure]) -> Traced {
    let segments: Vec<&str> = basis.split(['=', '≈']).collect();
    let last = segments.len() - 1;
    let mut unknown = Vec::new();
    let mut results = Vec::new();
    for (s, segment) in segments.iter().enumerate() {
        let found = figures::extract(segment);
        if s == last && last > 0 {
            results.extend(found);
            continue;
        }
        for (k, figure) in found.into_iter().enumerate() {
            if s > 0 && k == 0 {
                results.push(figure);
            } else if known.iter().any(|c| c.matches(&figure)) {
                if last == 0 {
                    results.push(figure);
                }
            } else {
                unknown.push(figure);
            }
        }
    }
    Traced {
        unknown,
        results,
        has_equals: last > 0,
    }
}

/// A figure as a short number for messages: "4500", "0.45", "16.8".
fn display(f: &Figure) -> String {
    let v = f.value;
    let s = if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    };
    if f.percent { format!("{s}%") } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller(text: &str) -> Vec<Figure> {
        figures::extract(text)
    }

    fn item(value: &str, basis: &str) -> Value {
        json!({"label": "x", "value": value, "basis": basis})
    }

    #[test]
    fn a_chain_of_items_traces_to_the_caller_and_constants() {
        let c = caller("20 leads a month, we close 45%, fee $500, revenue $42,000");
        let numbers = json!([
            item("9", "20 leads × 45% close rate = 9 new clients"),
            item(
                "$4,500",
                "9 new clients × $500 average monthly fee = $4,500"
            ),
            item("10.7%", "$4,500 / $42,000 monthly revenue = 10.7%"),
            item("$54,000/year", "$4,500 × 12 months = $54,000"),
        ]);
        assert_eq!(check_numbers(&numbers, &c), vec![]);
    }

    #[test]
    fn intermediate_results_rounding_and_restated_figures_are_accepted() {
        let c = caller("40 requests a week at 10 minutes, 240 members, 7% churn, $149");
        let numbers = json!([
            item(
                "6.7 hours/week",
                "40 requests × 10 minutes = 400 minutes = 6.7 hours"
            ),
            item("17", "240 members × 7% monthly churn = 16.8, about 17"),
            item("$2,503", "16.8 members × $149 = $2,503"),
            item("$149", "caller's monthly price"),
            item("4 of 7", "2 shared + 2 orphaned = 4 of 7"),
        ]);
        assert_eq!(check_numbers(&numbers, &c), vec![]);
    }

    #[test]
    fn invented_operands_and_unsupported_values_are_named_by_path() {
        let c = caller("20 leads, 45% close rate");
        let numbers = json!([
            item("9", "20 leads × 45% close rate = 9"),
            item("$4,500", "9 clients × $500 = $4,500"),
            item("12", "20 leads × 45% = 9"),
            item("38%", "industry benchmark"),
        ]);
        let v = check_numbers(&numbers, &c);
        let paths: Vec<&str> = v.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["/numbers/1/basis", "/numbers/2/value", "/numbers/3/value"]
        );
        assert!(v[0].message.starts_with("500 is not"), "{}", v[0].message);
        assert!(v[1].message.contains("result of basis"));
    }

    #[test]
    fn mistyped_items_do_not_panic() {
        let numbers = json!([null, 3, {"value": 9, "basis": ["x"]}, {}]);
        assert_eq!(check_numbers(&numbers, &[]), vec![]);
        assert_eq!(check_numbers(&json!("nope"), &[]), vec![]);
    }
}
