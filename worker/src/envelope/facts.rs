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

use super::figures::{self, Span};
use super::text::{has_any, words};

/// Clause words that make a statement hypothetical or about someone else.
const SKIP: [&str; 27] = [
    "want", "wants", "target", "targets", "goal", "aim", "plan", "planning", "hope", "would",
    "could", "if", "will", "expect", "forecast", "thinking", "maybe", "might", "should",
    "similar", "competitor", "competitors", "industry", "typical", "typically", "usually",
    "benchmark",
];

const MONTHLY: [&str; 6] = ["a month", "per month", "monthly", "each month", "every month", "month"];

const REVENUE: [&str; 11] = [
    "revenue", "make", "making", "made", "bring in", "brings in", "earn", "earning", "turnover",
    "gross", "sales",
];

const CLOSE: [&str; 8] = ["close", "closes", "closing", "close rate", "win rate", "convert", "conversion", "win"];

const CHURN: [&str; 7] = ["churn", "lose", "losing", "cancel", "cancels", "cancellations", "attrition"];

const AVERAGE_ORDER: [&str; 12] = [
    "average order", "average sale", "average deal", "average booking", "average project",
    "average job", "average ticket", "average invoice", "aov", "projects average", "jobs average",
    "orders average",
];

const PRICE: [&str; 7] = ["charge", "charges", "we charge", "priced at", "price is", "costs", "sells for"];

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
            let digit = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(char::is_ascii_digit);
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
                    out.push(Clause { text: q.to_owned(), sentence: sentence.clone() });
                }
            }
        }
    }
    out
}

fn metric_fields(clause: &str) -> Vec<&'static str> {
    let spans = figures::spans(clause);
    let monthly = has_any(clause, &MONTHLY) || clause.contains("/month") || clause.contains("/mo");
    let money = spans.iter().any(|s| s.figure.currency);
    let rate = spans.iter().any(|s| s.figure.percent);
    let mut out = Vec::new();
    if money && monthly && has_any(clause, &REVENUE) {
        out.push("metrics.monthly_revenue_usd");
    }
    if monthly && counted(clause, &spans, &["leads", "inquiries", "enquiries", "demo requests"]) {
        out.push("metrics.leads_per_month");
    }
    if monthly && counted(clause, &spans, &["visits", "visitors", "sessions", "pageviews"]) && has_any(clause, &["site", "website", "visits", "visitors"]) {
        out.push("metrics.traffic_per_month");
    }
    if rate && has_any(clause, &CHURN) {
        if monthly {
            out.push("metrics.monthly_churn_pct");
        }
    } else if rate && has_any(clause, &CLOSE) {
        out.push("metrics.close_rate_pct");
    }
    if money && has_any(clause, &AVERAGE_ORDER) {
        out.push("metrics.average_order_value_usd");
    }
    if money && !has_any(clause, &REVENUE) && has_any(clause, &PRICE) {
        out.push("offer.price_usd");
    }
    out
}

/// A plain count directly followed by one of `nouns` ("30 leads", "6,000 visits").
fn counted(clause: &str, spans: &[Span], nouns: &[&str]) -> bool {
    let chars: Vec<char> = clause.chars().collect();
    spans.iter().filter(|s| s.figure.is_plain()).any(|s| {
        let after: String = chars[s.chars.end..].iter().collect();
        let next = words(&after);
        // The noun comes next, or after one modifier ("6,000 site visits").
        nouns.iter().any(|n| {
            let nw = words(n);
            (0..=1).any(|skip| next.len() >= skip + nw.len() && next[skip..skip + nw.len()] == nw[..])
        })
    })
}

/// Openings that say what the business sells, who buys, their pain and the promise.
fn descriptive_fields(clause: &str) -> Vec<&'static str> {
    let w = words(clause);
    let starts = |phrases: &[&str]| {
        phrases.iter().any(|p| {
            let pw = words(p);
            w.windows(pw.len()).position(|x| x == pw.as_slice()).is_some_and(|at| w.len() >= at + pw.len() + 2)
        })
    };
    let mut out = Vec::new();
    let sells = starts(&["we sell", "i sell", "we offer", "we provide", "we run a", "i run a", "we are a", "we're a", "we own a", "i own a"]);
    if sells && figures::extract(clause).is_empty() {
        out.push("company.what_they_sell");
    }
    if starts(&["our ideal customer", "our ideal client", "our ideal customers", "our customers are", "our clients are", "we sell to", "we serve", "our buyers are"]) {
        out.push("audience.icp");
    }
    if starts(&["their biggest problem", "their main problem", "their pain", "they struggle with", "their problem is"]) {
        out.push("audience.pain");
    }
    if starts(&["we promise", "we guarantee", "our promise is", "our promise"]) {
        out.push("offer.promise");
    }
    if starts(&["we are pre", "we're pre", "still pre"]) || clause.to_lowercase().contains("pre-revenue") {
        out.push("company.stage");
    }
    if has_any(clause, &["industry"]) && starts(&["we are in the", "we're in the", "our industry is"]) {
        out.push("company.industry");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<&'static str> {
        let mut f = stated_fields([text].into_iter());
        f.sort_unstable();
        f
    }

    #[test]
    fn the_issue_example_gives_three_metrics() {
        assert_eq!(
            fields("We make $42,000 a month, get 30 leads a month and close 20%."),
            vec!["metrics.close_rate_pct", "metrics.leads_per_month", "metrics.monthly_revenue_usd"]
        );
    }

    #[test]
    fn other_metrics_and_descriptions() {
        assert_eq!(fields("We lose about 7% of members monthly."), vec!["metrics.monthly_churn_pct"]);
        assert_eq!(fields("Our average order is $210."), vec!["metrics.average_order_value_usd"]);
        assert_eq!(fields("We charge $180 per visit."), vec!["offer.price_usd"]);
        assert_eq!(fields("6,000 site visits a month."), vec!["metrics.traffic_per_month"]);
        assert_eq!(fields("We sell bookkeeping to small firms."), vec!["company.what_they_sell"]);
        assert_eq!(fields("See https://example.com"), vec!["company.website"]);
        assert_eq!(fields("Our ideal customer is a dental office."), vec!["audience.icp"]);
    }

    #[test]
    fn wishes_other_businesses_and_loose_figures_do_not_count() {
        assert_eq!(fields("We want to make $60,000 a month."), Vec::<&str>::new());
        assert_eq!(fields("Similar studios book 15% of inquiries."), Vec::<&str>::new());
        assert_eq!(fields("I'm thinking of charging $590."), Vec::<&str>::new());
        assert_eq!(fields("Revenue is flat and we got 30 leads."), Vec::<&str>::new());
        assert_eq!(fields("Target is $110,000 a month."), Vec::<&str>::new());
        assert_eq!(fields("Clients pay $500 a month on average."), Vec::<&str>::new());
        assert_eq!(fields("We close 20% of demos? No: 12% churn."), vec!["metrics.close_rate_pct"]);
    }
}
