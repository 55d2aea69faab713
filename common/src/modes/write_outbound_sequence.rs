//! write_outbound_sequence (spec 2.6): only the five literal `{{token}}`s may personalise a
//! message, each declared in `merge_fields`; anything that looks like a fill-in-the-blank
//! (`[Name]`, `{name}`, `<first name>`, `*|FNAME|*`, `%NAME%`) would go out to a prospect verbatim.

use super::path::{at, pattern};
use super::rules::push;
use super::words::word_count;
use super::{Ctx, Deliverable, Kinds};
use crate::catalog::{ids::ModeId, mode::Mode, mode::Tier};
use crate::schema::Violation;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub const MODE: Mode = Mode {
    id: ModeId::WriteOutboundSequence,
    tier: Tier::Deep,
    summary: "Writes a ready-to-send outbound sequence with declared merge fields.",
    purpose: "writes a ready-to-send outbound sequence",
    recommended_context: &[
        "audience.icp",
        "audience.pain",
        "offer.promise",
        "company.what_they_sell",
    ],
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteOutboundSequence {
    #[schemars(length(max = 300))]
    pub icp: String,
    pub channel: Channel,
    /// Lists every merge token used anywhere in the sequence; only these five literal tokens
    /// are permitted.
    #[schemars(schema_with = "merge_fields")]
    pub merge_fields: Vec<String>,
    #[schemars(length(min = 1, max = 6))]
    pub emails: Vec<Email>,
    #[schemars(length(max = 300))]
    pub follow_up_rule: String,
    /// Things findable in about two minutes.
    #[schemars(length(max = 4), inner(length(max = 120)))]
    pub personalization_inputs: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Email,
    Linkedin,
    ColdCall,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Email {
    #[schemars(range(min = 1))]
    pub step: i64,
    /// Days after step 1; step 1 is day 0.
    #[schemars(range(min = 0))]
    pub send_day: i64,
    #[schemars(length(max = 120))]
    pub subject: String,
    /// Personalised only with the five permitted merge tokens, each declared in merge_fields; no
    /// invented bracket placeholders.
    #[schemars(length(max = 1200))]
    pub body: String,
    #[schemars(length(max = 160))]
    pub goal: String,
}

/// The only merge tokens a sequence may use (spec 2.6).
pub const MERGE_TOKENS: [&str; 5] = [
    "{{first_name}}",
    "{{last_name}}",
    "{{company}}",
    "{{role}}",
    "{{city}}",
];

/// `merge_fields`: each of [`MERGE_TOKENS`] at most once.
fn merge_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": MERGE_TOKENS.len(),
        "uniqueItems": true,
        "items": {"type": "string", "enum": MERGE_TOKENS},
    })
}

/// Most words in one message body: "bodies are short" (a cold email reads in under a minute).
pub const BODY_WORDS: usize = 150;

/// Longest run between brackets still read as a placeholder rather than prose.
const MAX_INNER: usize = 40;

impl Deliverable for WriteOutboundSequence {
    fn kinds() -> Kinds {
        Kinds {
            proposals: vec![
                pattern!(Self: follow_up_rule),
                pattern!(Self: personalization_inputs[_]),
                pattern!(Self: emails[_].goal),
            ],
            ..Kinds::default()
        }
    }

    /// Merge tokens used and declared both ways, no other placeholders, steps 1..k, days from 0
    /// up.
    fn check(&self, _: &Ctx, out: &mut Vec<Violation>) {
        let declared: Vec<&str> = self.merge_fields.iter().map(String::as_str).collect();
        let mut used: Vec<String> = Vec::new();
        for (i, email) in self.emails.iter().enumerate() {
            let texts = [
                (&email.subject, at!(self.emails[i].subject), false),
                (&email.body, at!(self.emails[i].body), true),
            ];
            for (s, at, body) in texts {
                for token in merge_tokens(s) {
                    if !MERGE_TOKENS.contains(&token) {
                        let allowed = MERGE_TOKENS.join(", ");
                        push(out, at.clone(), format!("{token} is not one of {allowed}"));
                    } else if !declared.contains(&token) {
                        push(
                            out,
                            at.clone(),
                            format!("uses {token}, missing from merge_fields"),
                        );
                    }
                    if !used.iter().any(|u| u == token) {
                        used.push(token.to_owned());
                    }
                }
                for p in other_placeholders(s) {
                    push(
                        out,
                        at.clone(),
                        format!("placeholder {p} is not allowed; use a merge token or plain words"),
                    );
                }
                if let Some(mark) = markdown(s) {
                    push(
                        out,
                        at.clone(),
                        format!("must be plain text, without markdown ({mark})"),
                    );
                }
                let n = word_count(s);
                if body && n > BODY_WORDS {
                    push(
                        out,
                        at.clone(),
                        format!("must be at most {BODY_WORDS} words, has {n}"),
                    );
                }
            }
        }
        for (j, f) in declared.iter().enumerate() {
            if !used.iter().any(|u| u == f) {
                push(
                    out,
                    at!(self.merge_fields[j]),
                    format!("lists {f}, used in no subject or body"),
                );
            }
        }
        let mut prev_day: Option<i64> = None;
        for (i, email) in self.emails.iter().enumerate() {
            if email.step != i as i64 + 1 {
                push(
                    out,
                    at!(self.emails[i].step),
                    format!("must be {}: steps run 1, 2, 3… in order", i + 1),
                );
            }
            let day = email.send_day;
            if i == 0 && day != 0 {
                push(out, at!(self.emails[0].send_day), "must be 0: step 1 is day 0");
            }
            if let Some(p) = prev_day.filter(|p| day < *p) {
                push(
                    out,
                    at!(self.emails[i].send_day),
                    format!("must not be before the previous step's day {p}"),
                );
            }
            prev_day = Some(day);
        }
    }
}

/// Every `{{…}}` in `text`, braces included, in order (allowed or not).
pub fn merge_tokens(text: &str) -> Vec<&str> {
    spans(text, "{{", "}}", |_| true)
        .into_iter()
        .map(|(a, b)| &text[a..b])
        .collect()
}

/// Placeholders in any syntax other than `{{…}}`.
pub fn other_placeholders(text: &str) -> Vec<String> {
    // Blank out the `{{…}}` tokens (judged separately) so their braces are not seen again.
    let mut blanked = text.to_owned();
    for (a, b) in spans(text, "{{", "}}", |_| true) {
        blanked.replace_range(a..b, &" ".repeat(b - a));
    }
    let mut found = Vec::new();
    for (open, close) in [("[", "]"), ("{", "}"), ("<", ">"), ("*|", "|*"), ("%", "%")] {
        for (a, b) in spans(&blanked, open, close, |inner| {
            looks_like_placeholder(open, inner)
        }) {
            found.push(blanked[a..b].to_owned());
        }
    }
    found
}

fn looks_like_placeholder(open: &str, inner: &str) -> bool {
    let has_letter = inner.chars().any(char::is_alphabetic);
    let wordish = inner
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.'));
    match open {
        // "<first name>" yes; "costs < 5 and > 2" no.
        "<" => has_letter && wordish && !inner.starts_with(' '),
        // "%FIRST_NAME%" yes; "5% to 10%" no.
        "%" => has_letter && inner.chars().all(|c| c.is_alphabetic() || c == '_'),
        _ => has_letter,
    }
}

/// Byte ranges `[start, end)` of `open … close` pairs on one line with a short inside that
/// `accept` takes. A rejected pair does not consume its closing mark, which may open the next
/// ("50% off, %NAME%").
fn spans(
    text: &str,
    open: &str,
    close: &str,
    accept: impl Fn(&str) -> bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find(open) {
        let start = from + rel;
        let inner_from = start + open.len();
        let rest = &text[inner_from..];
        let Some(end_rel) = rest.find(close) else {
            break;
        };
        let inner = &rest[..end_rel];
        let short = inner.chars().count() <= MAX_INNER && !inner.contains('\n');
        if short && !inner.is_empty() && !inner.contains(open) && accept(inner) {
            let end = inner_from + end_rel + close.len();
            out.push((start, end));
            from = end;
        } else {
            from = inner_from;
        }
    }
    out
}

/// The first markdown mark in `s`, if any: emphasis, a heading, a link or a code span.
pub fn markdown(s: &str) -> Option<&'static str> {
    if s.contains("**") || s.contains("__") {
        return Some("bold");
    }
    if s.lines().any(|l| l.trim_start().starts_with('#')) {
        return Some("a heading");
    }
    if s.contains("](") {
        return Some("a link");
    }
    if s.contains('`') {
        return Some("a code span");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_merge_tokens_allowed_or_not() {
        let t = "Hi {{first_name}} at {{company}}, {{ first_name }} and {{deal_size}}";
        assert_eq!(
            merge_tokens(t),
            vec![
                "{{first_name}}",
                "{{company}}",
                "{{ first_name }}",
                "{{deal_size}}"
            ]
        );
    }

    #[test]
    fn flags_invented_placeholders_but_not_prose() {
        let t = "Hi [Name], {company} <first name> *|FNAME|* %CITY% {{first_name}}";
        assert_eq!(
            other_placeholders(t),
            vec!["[Name]", "{company}", "<first name>", "*|FNAME|*", "%CITY%"]
        );
        assert_eq!(other_placeholders("50% off, %NAME%"), vec!["%NAME%"]);
        let prose = "Costs fell 5% to 10% when x < 5 and y > 2. {{first_name}}, {{city}}";
        assert_eq!(other_placeholders(prose), Vec::<String>::new());
    }
}
