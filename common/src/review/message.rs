//! The SMS text: the business's template (or ours), three tokens, and the opt-out sentence
//! appended when the template carries no opt-out instruction (CONTRACT 9, sms.md 3.4).

use super::encoding::{Encoding, measure};
use crate::schema::Violation;
use serde::{Deserialize, Serialize};

const PATH: &str = "/message/template";
/// Rendered messages longer than this are refused (CONTRACT 9): three segments at most.
pub const MAX_CHARS: usize = 320;
pub const OPT_OUT_SENTENCE: &str = "Reply STOP to opt out.";
/// Neutral on purpose: no rating asked for, no incentive, the same words for every customer.
pub const DEFAULT_TEMPLATE: &str = "Hi {first_name}, thanks for choosing {business_name}! Would you leave us a quick review? {review_link}";
const FOLLOW_UP_TEMPLATE: &str =
    "Hi {first_name}, a quick reminder from {business_name}: we'd value your review. {review_link}";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendered {
    pub body: String,
    pub encoding: Encoding,
    pub segments: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Token {
    FirstName,
    BusinessName,
    ReviewLink,
}

enum Piece<'a> {
    Text(&'a str),
    Token(Token),
}

/// Renders the first message. Every problem with the template is returned at once.
pub fn render(
    template: Option<&str>,
    first_name: &str,
    business_name: &str,
    link: &str,
) -> Result<Rendered, Vec<Violation>> {
    let pieces = parse(template.unwrap_or(DEFAULT_TEMPLATE))?;
    // Words and names that pass alone may still join into an address ("{business_name}.ly").
    let joined = fill(&pieces, first_name, business_name, " ").body;
    if screen::problems(first_name).is_empty()
        && screen::problems(business_name).is_empty()
        && !screen::problems(&joined).is_empty()
    {
        return Err(vec![Violation::new(
            PATH,
            "the template and the names together form a web address; only {review_link} may \
             carry a link",
        )]);
    }
    let rendered = fill(&pieces, first_name, business_name, link);
    let length = rendered.body.chars().count();
    if length > MAX_CHARS {
        return Err(vec![Violation::new(
            PATH,
            format!(
                "the rendered message is {length} characters (with names, the link and the \
                 opt-out sentence); the limit is {MAX_CHARS}"
            ),
        )]);
    }
    Ok(rendered)
}

/// The one reminder: short, same opt-out rule, and a fixed text so it cannot fail.
pub fn render_follow_up(first_name: &str, business_name: &str, link: &str) -> Rendered {
    let pieces = parse(FOLLOW_UP_TEMPLATE).unwrap_or_default();
    fill(&pieces, first_name, business_name, link)
}

/// Splits a template into literal text and tokens in one pass, so a name that happens to contain
/// `{review_link}` is never expanded.
fn parse(template: &str) -> Result<Vec<Piece<'_>>, Vec<Violation>> {
    let (mut pieces, mut errors) = (Vec::new(), Vec::new());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pieces.push(Piece::Text(&rest[..open]));
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            errors.push(Violation::new(PATH, "has a '{' that is never closed"));
            rest = "";
            break;
        };
        match &after[..close] {
            "first_name" => pieces.push(Piece::Token(Token::FirstName)),
            "business_name" => pieces.push(Piece::Token(Token::BusinessName)),
            "review_link" => pieces.push(Piece::Token(Token::ReviewLink)),
            other => {
                let message = format!(
                    "unknown token {{{other}}}; only {{first_name}}, {{business_name}} and \
                     {{review_link}} may be used"
                );
                if !errors.iter().any(|e: &Violation| e.message == message) {
                    errors.push(Violation::new(PATH, message));
                }
            }
        }
        rest = &after[close + 1..];
    }
    pieces.push(Piece::Text(rest));
    let literal: Vec<&str> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Text(t) => Some(*t),
            Piece::Token(_) => None,
        })
        .collect();
    for problem in screen::problems(&literal.join(" ")) {
        errors.push(Violation::new(PATH, problem));
    }
    for (token, name) in [
        (Token::BusinessName, "{business_name}"),
        (Token::ReviewLink, "{review_link}"),
    ] {
        if !pieces
            .iter()
            .any(|p| matches!(p, Piece::Token(t) if *t == token))
        {
            errors.push(Violation::new(PATH, format!("must contain {name}")));
        }
    }
    if errors.is_empty() {
        Ok(pieces)
    } else {
        Err(errors)
    }
}

fn fill(pieces: &[Piece<'_>], first_name: &str, business_name: &str, link: &str) -> Rendered {
    let mut body = String::new();
    for piece in pieces {
        body.push_str(match piece {
            Piece::Text(t) => t,
            Piece::Token(Token::FirstName) => first_name,
            Piece::Token(Token::BusinessName) => business_name,
            Piece::Token(Token::ReviewLink) => link,
        });
    }
    // Only the template's own words count: a business called "One Stop Shop" is not an
    // opt-out instruction.
    let literal: Vec<&str> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Text(t) => Some(*t),
            Piece::Token(_) => None,
        })
        .collect();
    if !has_opt_out_instruction(&literal.join(" ")) {
        body.truncate(body.trim_end().len());
        body.push(' ');
        body.push_str(OPT_OUT_SENTENCE);
    }
    let (encoding, segments) = measure(&body);
    Rendered {
        body,
        encoding,
        segments,
    }
}

/// An opt-out instruction in that exact sense: STOP (any case) followed by "to" and an opt-out
/// word ("Reply STOP to opt out", "Text stop to unsubscribe", "STOP to end"), or after "reply",
/// "text", "txt", "send" or "respond" at the end of a sentence ("Reply STOP."). A word that merely
/// contains STOP, or STOP in another sense ("NON STOP savings", "Stop by soon"), is none.
fn has_opt_out_instruction(text: &str) -> bool {
    const VERBS: [&str; 5] = ["reply", "text", "txt", "send", "respond"];
    const ENDS: [&str; 8] = [
        "opt",
        "optout",
        "unsubscribe",
        "end",
        "cancel",
        "stop",
        "quit",
        "unsub",
    ];
    // Words with the punctuation that ends a sentence kept as a word of its own.
    let mut words: Vec<String> = Vec::new();
    for raw in text.split_whitespace() {
        let w: String = raw.chars().filter(|c| c.is_alphanumeric()).collect();
        if !w.is_empty() {
            words.push(w.to_lowercase());
        }
        if raw.ends_with(['.', '!', ')', ';', ',']) {
            words.push(".".into());
        }
    }
    let is_end = |i: usize| ENDS.contains(&words.get(i).map(String::as_str).unwrap_or_default());
    words.iter().enumerate().any(|(i, w)| {
        if w != "stop" {
            return false;
        }
        let after_to = words.get(i + 1).is_some_and(|n| n == "to") && is_end(i + 2);
        let after_verb = i > 0 && VERBS.contains(&words[i - 1].as_str());
        // "STOP to opt out", or "Reply STOP" ending its sentence or followed by "to <end>".
        after_to || (after_verb && matches!(words.get(i + 1).map(String::as_str), None | Some(".")))
    })
}

pub mod screen;
#[cfg(test)]
mod tests;
