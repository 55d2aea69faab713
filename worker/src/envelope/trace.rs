//! Every `numbers[]` item must trace to the caller: its `basis` is a one-line calculation whose
//! operands are the caller's figures, results of earlier items, or unit constants, whose result
//! is what the calculation gives ([`arith`]), and whose result is the figure shown in `value`
//! (spec 2.4; llm.md §5.3 "number provenance").

use super::arith::{self, Interval, number};
use super::figures::{self, Figure};
use grove_common::schema::Violation;
use serde_json::Value;

/// Unit conversions a calculation may use without the caller stating them: counts, days, weeks,
/// months, hours, percent and thousands, plus minutes per hour and weeks per month (4.33). They
/// stand only for plain figures: "12%" or "$12" is never the constant 12.
pub const CONSTANTS: [f64; 15] = [
    1.0, 2.0, 3.0, 4.0, 7.0, 12.0, 24.0, 30.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 4.33, 4.345,
];

/// What a figure may trace to while `numbers` is read in order.
pub struct Known {
    caller: Vec<Figure>,
    earlier: Vec<Figure>,
    /// Earlier results with the value their calculation gave, in their written units.
    computed: Vec<(Figure, Interval)>,
}

impl Known {
    pub fn new(caller: &[Figure]) -> Self {
        Self {
            caller: caller.to_vec(),
            earlier: Vec::new(),
            computed: Vec::new(),
        }
    }

    /// The caller's figure, an earlier item's, or a unit constant, within rounding.
    pub fn has(&self, f: &Figure) -> bool {
        self.caller
            .iter()
            .chain(&self.earlier)
            .any(|k| k.matches(f))
            || constant(f)
    }

    /// What a known operand stands for: exactly the caller's figure or a unit constant, or an
    /// earlier result's computed value (with its display, which the model may have reused).
    fn exact(&self, f: &Figure) -> Option<Interval> {
        let constant = f.is_plain() && CONSTANTS.iter().any(|&c| Figure::exact(c).equals(f));
        if constant || self.caller.iter().any(|k| k.equals(f)) {
            return Some(Interval::point(f.value));
        }
        self.computed
            .iter()
            .find(|(k, _)| k.matches(f))
            .map(|(_, i)| i.hull(Interval::point(f.value)))
    }

    /// Every figure `numbers` showed or used, after [`check_numbers`].
    pub fn earlier(&self) -> &[Figure] {
        &self.earlier
    }
}

fn constant(f: &Figure) -> bool {
    f.is_plain() && CONSTANTS.iter().any(|&c| Figure::exact(c).matches(f))
}

/// Violations for every `numbers[]` item whose figures do not trace to `caller` figures or whose
/// arithmetic is wrong. Items are read in order, so an item may build on the items before it.
#[cfg(test)]
pub fn check_numbers(numbers: &Value, caller: &[Figure]) -> Vec<Violation> {
    let mut known = Known::new(caller);
    check_into(numbers, &mut known)
}

/// [`check_numbers`], leaving in `known` every figure the items showed or used.
pub fn check_into(numbers: &Value, known: &mut Known) -> Vec<Violation> {
    let mut out = Vec::new();
    let items = numbers.as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let basis = item.get("basis").and_then(Value::as_str).unwrap_or("");
        let value = item.get("value").and_then(Value::as_str).unwrap_or("");
        let at = |field: &str| format!("/numbers/{i}/{field}");
        let mut say = |field: &str, message: String| out.push(Violation::new(at(field), message));
        if basis.trim().contains('\n') {
            say("basis", "must be one line".into());
        }
        let (pool, unknown, faults) = if basis.contains(['=', '≈']) {
            let chain = arith::evaluate(basis, &|f| known.exact(f));
            let mut unknown: Vec<Figure> = chain
                .operands
                .iter()
                .chain(&chain.restated)
                .filter(|f| !known.has(f))
                .copied()
                .collect();
            let last = chain
                .results
                .last()
                .map(|r| r.0)
                .or(chain.restated.last().copied());
            for t in &chain.trailing {
                if !last.is_some_and(|r| r.matches(t)) && !known.has(t) {
                    unknown.push(*t);
                }
            }
            known.computed.extend(chain.results.iter().copied());
            let mut pool: Vec<Figure> = chain.results.iter().map(|r| r.0).collect();
            pool.extend(&chain.restated);
            pool.extend(&chain.trailing);
            (pool, unknown, chain.faults)
        } else {
            // Without an `=`, the item restates figures: each must be one we already know.
            let found = figures::extract(basis);
            let unknown = found.iter().filter(|f| !known.has(f)).copied().collect();
            let pool = found.into_iter().filter(|f| known.has(f)).collect();
            (pool, unknown, Vec::new())
        };
        for f in &unknown {
            say(
                "basis",
                format!(
                    "{} is not a figure the caller gave, a result of an earlier item, or a common \
                     constant",
                    display(f)
                ),
            );
        }
        for fault in faults {
            say("basis", fault);
        }
        let shown = figures::extract(value);
        if let Some((head, rest)) = shown.split_first() {
            let restating = !basis.contains(['=', '≈']);
            let restated_known = restating && known.has(head);
            if !(pool.iter().any(|r| r.matches(head)) || restated_known) {
                let message = if restating {
                    format!(
                        "{} is not the caller's figure; basis must show the calculation ending \
                         \"= {}\"",
                        display(head),
                        display(head)
                    )
                } else {
                    format!("{} must be the result of basis", display(head))
                };
                say("value", message);
            }
            for extra in rest {
                if !pool.iter().any(|r| r.matches(extra)) && !known.has(extra) {
                    say(
                        "value",
                        format!("{} does not appear in basis", display(extra)),
                    );
                }
            }
        }
        known.earlier.extend(pool);
        known.earlier.extend(shown);
        known.earlier.extend(
            figures::extract(basis)
                .into_iter()
                .filter(|f| !unknown.contains(f)),
        );
    }
    out
}

/// A figure as a short number for messages: "4500", "0.45", "16.8".
pub fn display(f: &Figure) -> String {
    let s = number(f.value);
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
    fn wrong_arithmetic_is_refused_even_when_every_operand_traces() {
        let c = caller("We get 30 leads a month and close 20%.");
        let wrong = json!([item("9", "30 leads × 20% close rate = 9")]);
        let v = check_numbers(&wrong, &c);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].path, "/numbers/0/basis");
        assert_eq!(v[0].message, "9 is not what the calculation gives (6)");
        let right = json!([item("6", "30 leads × 20% close rate = 6")]);
        assert_eq!(check_numbers(&right, &c), vec![]);
    }

    #[test]
    fn a_rate_is_not_a_unit_constant_and_basis_is_one_line() {
        let c = caller("200 members");
        let numbers = json!([item("24", "200 members × 12% churn = 24")]);
        let v = check_numbers(&numbers, &c);
        assert!(v[0].message.starts_with("12% is not"), "{v:?}");
        let numbers = json!([item("24", "200 members × 12%\n= 24")]);
        assert!(
            check_numbers(&numbers, &caller("200 members, 12%"))
                .iter()
                .any(|v| v.message == "must be one line")
        );
    }

    #[test]
    fn mistyped_items_do_not_panic() {
        let numbers = json!([null, 3, {"value": 9, "basis": ["x"]}, {}]);
        assert_eq!(check_numbers(&numbers, &[]), vec![]);
        assert_eq!(check_numbers(&json!("nope"), &[]), vec![]);
    }
}
