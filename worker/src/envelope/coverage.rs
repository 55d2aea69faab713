//! How much the caller told us: missing recommended context, whether any figures were given, and
//! the confidence the answer may claim as a result (llm.md §7: enforced in code, not only asked for).

use super::facts;
use super::figures::{self, Figure};
use grove_common::catalog::Mode;
use grove_common::requests::{CoachingRequest, Role};
use serde_json::Value;
use std::sync::OnceLock;

/// `thinking.confidence`, ordered so that a ceiling is a plain `min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub const fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }

    /// Case-insensitive, since Anthropic does not guarantee enum case.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Confidence::Low),
            "medium" => Some(Confidence::Medium),
            "high" => Some(Confidence::High),
            _ => None,
        }
    }
}

/// The caller's request and what it gives, worked out once per call: the prompt, the assembly and
/// every check of every answer read it (issue 12: the same walks ran nine times a call).
pub struct Caller<'a> {
    pub request: &'a CoachingRequest,
    /// [`missing_recommended`].
    pub missing: Vec<&'static str>,
    /// [`confidence_ceiling`].
    pub ceiling: Confidence,
    /// [`caller_figures`].
    pub figures: Vec<Figure>,
    /// The caller's own words, made when an answer is first checked ([`Caller::text`]).
    text: OnceLock<String>,
}

impl<'a> Caller<'a> {
    pub fn of(mode: &Mode, request: &'a CoachingRequest) -> Self {
        let context = context_tree(request);
        let missing = missing_in(mode, request, context.as_ref());
        let figures = figures_in(request, context.as_ref());
        let ceiling = ceiling_of(mode, &missing, !figures.is_empty());
        Self {
            request,
            missing,
            ceiling,
            figures,
            text: OnceLock::new(),
        }
    }

    /// The caller's own words: every `user` message and every string of `context`, one per line.
    /// Made when an answer is first checked, not with the prompt: a copy of the conversation
    /// made before the model is asked is held for the whole wait (issue 31).
    pub fn text(&self) -> &str {
        self.text
            .get_or_init(|| text_in(self.request, context_tree(self.request).as_ref()))
    }

    /// [`caller_gave_numbers`].
    pub fn gave_numbers(&self) -> bool {
        !self.figures.is_empty()
    }
}

/// The mode's recommended context fields (dotted, catalog order) that the request does not give:
/// absent, null, or blank in `context` (an empty list or object counts as not given either) and
/// not stated unambiguously in the caller's own messages ([`facts`]).
pub fn missing_recommended(mode: &Mode, request: &CoachingRequest) -> Vec<&'static str> {
    missing_in(mode, request, context_tree(request).as_ref())
}

fn missing_in(
    mode: &Mode,
    request: &CoachingRequest,
    context: Option<&Value>,
) -> Vec<&'static str> {
    let stated = facts::stated_fields(user_messages(request));
    mode.recommended_context
        .iter()
        .copied()
        .filter(|path| !stated.contains(path))
        .filter(|path| {
            let mut at = context;
            for key in path.split('.') {
                at = at.and_then(|v| v.get(key));
            }
            !is_given(at)
        })
        .collect()
}

/// The caller's context as the JSON it sent (the type writes it back unchanged), for the walks
/// that take every field alike: the dotted recommended paths, every figure, every string.
fn context_tree(request: &CoachingRequest) -> Option<Value> {
    request
        .context
        .as_ref()
        .and_then(|c| serde_json::to_value(c).ok())
}

fn is_given(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

/// Every figure the caller supplied: numeric context fields, numbers written in context strings,
/// and numbers in the caller's `user` messages. `assistant` turns are left out on purpose: they
/// may be an earlier model answer, and a number a model invented once must not launder itself.
pub fn caller_figures(request: &CoachingRequest) -> Vec<Figure> {
    figures_in(request, context_tree(request).as_ref())
}

fn figures_in(request: &CoachingRequest, context: Option<&Value>) -> Vec<Figure> {
    let mut out = Vec::new();
    if let Some(context) = context {
        collect_context(context, &mut out);
    }
    for message in user_messages(request) {
        out.extend(figures::extract(message));
    }
    out
}

fn collect_context(value: &Value, out: &mut Vec<Figure>) {
    match value {
        Value::Number(n) => out.extend(n.as_f64().map(Figure::exact)),
        Value::String(s) => out.extend(figures::extract(s)),
        Value::Array(items) => items.iter().for_each(|v| collect_context(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_context(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// The caller's own words: every `user` message and every string of `context`, one per line.
fn text_in(request: &CoachingRequest, context: Option<&Value>) -> String {
    let mut parts: Vec<&str> = user_messages(request).collect();
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    if let Some(c) = context {
        strings(c, &mut parts);
    }
    parts.join("\n")
}

/// The content of each `user` message, in order.
pub fn user_messages(request: &CoachingRequest) -> impl Iterator<Item = &str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
}

/// True when the caller gave at least one figure (see [`caller_figures`]); with none, the
/// envelope's `numbers` must be empty (spec 2.4). Context strings count as well as numeric
/// fields, so that a figure we would accept as traceable is never forced out.
pub fn caller_gave_numbers(request: &CoachingRequest) -> bool {
    !caller_figures(request).is_empty()
}

/// The highest confidence the answer may claim. With `n` recommended fields of which `m` are
/// missing:
/// - **low** when half or more are missing (`2m >= n`), or when the caller gave no figures at all
///   and two or more are missing: the diagnosis then rests mostly on assumptions;
/// - **high** only when the caller gave figures and at most one field is missing, and that one is
///   not a metric (a descriptive gap such as `company.stage` does not undermine real numbers,
///   while a missing metric is exactly the "key quantity missing" of llm.md's medium rubric);
/// - **medium** otherwise.
///
/// A field stated plainly in the messages counts as given, exactly as if it were in `context`.
pub fn confidence_ceiling(mode: &Mode, request: &CoachingRequest) -> Confidence {
    ceiling_of(
        mode,
        &missing_recommended(mode, request),
        caller_gave_numbers(request),
    )
}

fn ceiling_of(mode: &Mode, missing: &[&str], numbers: bool) -> Confidence {
    let (n, m) = (mode.recommended_context.len(), missing.len());
    if (n > 0 && 2 * m >= n) || (!numbers && m >= 2) {
        Confidence::Low
    } else if numbers && m <= 1 && !missing.iter().any(|f| f.starts_with("metrics.")) {
        Confidence::High
    } else {
        Confidence::Medium
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::catalog;
    use serde_json::json;

    fn diagnose() -> &'static Mode {
        catalog::mode(catalog::ModeId::DiagnoseGrowth)
    }

    fn request(context: Value, text: &str) -> CoachingRequest {
        typed(json!({"mode": "diagnose_growth", "context": context,
               "messages": [{"role": "user", "content": text}]}))
    }

    fn typed(body: Value) -> CoachingRequest {
        serde_json::from_value(body).expect("a coaching request")
    }

    #[test]
    fn missing_fields_are_absent_null_or_blank_in_catalog_order() {
        let r = request(
            json!({"company": {"what_they_sell": "  "}, "metrics": {"monthly_revenue_usd": null,
                   "leads_per_month": 0}}),
            "hi",
        );
        assert_eq!(
            missing_recommended(diagnose(), &r),
            vec![
                "company.what_they_sell",
                "metrics.monthly_revenue_usd",
                "metrics.close_rate_pct"
            ]
        );
        let bare = typed(json!({"mode": "diagnose_growth", "messages": []}));
        assert_eq!(missing_recommended(diagnose(), &bare).len(), 4);
    }

    #[test]
    fn numbers_count_from_context_and_user_messages_but_not_assistant_turns() {
        assert!(caller_gave_numbers(&request(json!({}), "we close 45%")));
        assert!(caller_gave_numbers(&request(
            json!({"metrics": {"cac_usd": 0}}),
            "hi"
        )));
        let assistant_only = typed(json!({"mode": "diagnose_growth", "messages": [
            {"role": "assistant", "content": "You make $42,000."},
            {"role": "user", "content": "Why is growth flat?"}]}));
        assert!(!caller_gave_numbers(&assistant_only));
        assert!(!caller_gave_numbers(&request(json!({}), "Q4 was slow")));
    }

    #[test]
    fn ceiling_follows_coverage_and_figures() {
        let full = json!({"company": {"what_they_sell": "bookkeeping"},
            "metrics": {"monthly_revenue_usd": 42000, "leads_per_month": 20, "close_rate_pct": 45}});
        assert_eq!(
            confidence_ceiling(diagnose(), &request(full, "flat")),
            Confidence::High
        );
        let no_sell = json!({"metrics": {"monthly_revenue_usd": 42000, "leads_per_month": 20,
            "close_rate_pct": 45}});
        assert_eq!(
            confidence_ceiling(diagnose(), &request(no_sell, "flat")),
            Confidence::High
        );
        let no_metric = json!({"company": {"what_they_sell": "bookkeeping"},
            "metrics": {"monthly_revenue_usd": 42000, "leads_per_month": 20}});
        assert_eq!(
            confidence_ceiling(diagnose(), &request(no_metric, "flat")),
            Confidence::Medium
        );
        let half = json!({"metrics": {"monthly_revenue_usd": 42000, "leads_per_month": 20}});
        assert_eq!(
            confidence_ceiling(diagnose(), &request(half, "flat")),
            Confidence::Low
        );
        let words_only = json!({"company": {"what_they_sell": "bookkeeping"}});
        assert_eq!(
            confidence_ceiling(diagnose(), &request(words_only, "growth is flat")),
            Confidence::Low
        );
        assert!(Confidence::Low < Confidence::High);
        assert_eq!(Confidence::parse(" HIGH "), Some(Confidence::High));
    }
}
