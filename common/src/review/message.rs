//! The SMS text: the business's template (or ours), three tokens, and the opt-out sentence
//! appended when the template carries no opt-out instruction (CONTRACT 9, sms.md 3.4).

use super::codes;
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
        return Err(vec![
            Violation::new(
                PATH,
                "the template and the names together form a web address; only {review_link} may \
                 carry a link",
            )
            .with_code(codes::LINK_NOT_ALLOWED),
        ]);
    }
    let rendered = fill(&pieces, first_name, business_name, link);
    let length = rendered.body.chars().count();
    if length > MAX_CHARS {
        return Err(vec![
            Violation::new(
                PATH,
                format!(
                    "the rendered message is {length} characters (with names, the link and the \
                     opt-out sentence); the limit is {MAX_CHARS}"
                ),
            )
            .with_code(codes::TEMPLATE_TOO_LONG),
        ]);
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
            errors.push(
                Violation::new(PATH, "has a '{' that is never closed")
                    .with_code(codes::TEMPLATE_INVALID),
            );
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
                    errors.push(Violation::new(PATH, message).with_code(codes::TEMPLATE_INVALID));
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
    for found in screen::problems(&literal.join(" ")) {
        errors.push(found.at(PATH));
    }
    for (token, name) in [
        (Token::BusinessName, "{business_name}"),
        (Token::ReviewLink, "{review_link}"),
    ] {
        if !pieces
            .iter()
            .any(|p| matches!(p, Piece::Token(t) if *t == token))
        {
            errors.push(
                Violation::new(PATH, format!("must contain {name}"))
                    .with_code(codes::TEMPLATE_INVALID),
            );
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

/// An opt-out instruction in that exact sense: STOP as the word to send, followed by what sending
/// it does, or ending the sentence after the verb that says to send it. Counted:
/// "Reply STOP to opt out", "Text STOP to opt-out of these texts", "STOP to unsubscribe", "Reply
/// STOP to cancel.", "Txt STOP to end messages", "Reply STOP to stop receiving texts", "Reply
/// STOP." Not counted: "Reply STOP to opt in", "Reply STOP to cancel your booking", "Reply STOP to
/// win a prize", "NON STOP savings", "Stop by soon", and a word that merely contains STOP.
fn has_opt_out_instruction(text: &str) -> bool {
    const VERBS: [&str; 5] = ["reply", "text", "txt", "send", "respond"];
    // "to stop", "to end", "to cancel", "to quit": only alone or with the messages as object.
    const STOP_VERBS: [&str; 4] = ["stop", "end", "cancel", "quit"];
    const FILLERS: [&str; 9] = [
        "all",
        "these",
        "the",
        "our",
        "my",
        "future",
        "further",
        "more",
        "receiving",
    ];
    const MESSAGES: [&str; 10] = [
        "messages",
        "message",
        "msgs",
        "texts",
        "text",
        "sms",
        "alerts",
        "reminders",
        "notifications",
        "msg",
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
    let at = |i: usize| words.get(i).map(String::as_str);
    let sentence_ends = |i: usize| matches!(at(i), None | Some("."));
    // What follows "STOP to": an opt-out in so many words, or stopping the messages.
    let opts_out = |j: usize| match at(j) {
        Some("optout" | "unsubscribe" | "unsub") => true,
        Some("opt") => at(j + 1) == Some("out"),
        Some(verb) if STOP_VERBS.contains(&verb) => {
            let mut k = j + 1;
            while at(k).is_some_and(|w| FILLERS.contains(&w)) {
                k += 1;
            }
            (k == j + 1 && sentence_ends(k)) || at(k).is_some_and(|w| MESSAGES.contains(&w))
        }
        _ => false,
    };
    words.iter().enumerate().any(|(i, w)| {
        if w != "stop" {
            return false;
        }
        let after_verb = i > 0 && VERBS.contains(&words[i - 1].as_str());
        (at(i + 1) == Some("to") && opts_out(i + 2)) || (after_verb && sentence_ends(i + 1))
    })
}

pub mod screen;
#[cfg(test)]
mod tests;
