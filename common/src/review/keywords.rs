//! Inbound replies: opt-out, opt-in and help keywords (CONTRACT 9, sms.md 2.3). A keyword is the
//! whole message, trimmed, in any case. Missing an opt-out is a legal problem, wrongly lifting one
//! is too, so the two sides are matched with different generosity (see `classify`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    OptOut,
    OptIn,
    Help,
    Other,
}

/// CONTRACT 9's list, which is Twilio's default opt-out keywords (STOP, STOPALL, UNSUBSCRIBE,
/// CANCEL, END, QUIT, REVOKE, OPTOUT; support.twilio.com article 223134027) and so covers the
/// CTIA Messaging Principles' STOP, END, CANCEL, UNSUBSCRIBE, QUIT and the FCC's listed words
/// (47 CFR 64.1200(a)(10)), plus the carriers' and the note's extra opt-out words (AWS: OPT-OUT,
/// REMOVE, ARRET, TD; Telnyx: STOP ALL; Spanish and French replies). sms.md 2.3 has the sources.
const OPT_OUT: &[&str] = &[
    "STOP",
    "STOPALL",
    "STOP ALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "REVOKE",
    "OPTOUT",
    "OPT OUT",
    "OPT-OUT",
    "REMOVE",
    "ARRET",
    "ARRÊT",
    "ARRETE",
    "ARRÊTE",
    "TD",
    "NO MAS",
    "NO MÁS",
];
const OPT_IN: &[&str] = &["START", "UNSTOP", "YES"];
const HELP: &[&str] = &["HELP", "INFO"];

/// Classifies a whole inbound message. Surrounding whitespace and case never matter and inner
/// runs of whitespace count as one space. Trailing punctuation ("Stop!", "STOP.") is forgiven
/// for opt-out and help, where reading too much is harmless, but not for opt-in: "Yes!" may be
/// an answer to something else, and lifting an opt-out needs the plain keyword.
pub fn classify(body: &str) -> Keyword {
    let exact = normalise(body);
    let loose = exact
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .to_owned();
    if OPT_OUT.contains(&loose.as_str()) {
        Keyword::OptOut
    } else if OPT_IN.contains(&exact.as_str()) {
        Keyword::OptIn
    } else if HELP.contains(&loose.as_str()) {
        Keyword::Help
    } else {
        Keyword::Other
    }
}

/// Free text a reasonable person would read as "stop messaging me". Since FCC 24-24 (the Report
/// and Order of February 2024, CG Docket 02-278, 89 FR 15756; 47 CFR 64.1200(a)(10), in force
/// from 2025-04-11) a consumer may revoke consent "by using any reasonable method", and the words
/// stop, quit, end, revoke, opt out, cancel and unsubscribe in reply to a text are revocation in
/// themselves; other wording counts when a reasonable person would read it so. The keyword lists
/// (Twilio's default opt-out keywords, the CTIA Messaging Principles' STOP, END, CANCEL,
/// UNSUBSCRIBE and QUIT) cover the whole-message case, [`classify`].
///
/// A reply revokes when one of its clauses (text between `.`, `,`, `!`, `?`, `;`, `:` or a line
/// break) is only such words and politeness ("STOP please", "Unsubscribe, thanks", "Cancel!"),
/// or says it in plain words: "stop/quit texting me", "end these texts", "don't text/message/
/// contact/call me", "take me off your list", "leave me alone", "revoke my consent", "no more
/// messages", "I want to stop", "opt me out". Where STOP is no request ("don't stop", "can't stop
/// smiling", "stop by") or the words are about something else ("cancel my appointment", "take me
/// off the waitlist", "not interested", "wrong number"), the reply is not read as an opt-out: the
/// inbound handler records it for the business to read instead.
pub fn reads_as_opt_out(body: &str) -> bool {
    classify(body) == Keyword::OptOut || clauses(body).iter().any(|c| clause_revokes(c))
}

/// Single words that revoke on their own (the FCC's list, Twilio's and the carriers' keywords),
/// after "OPT OUT" has been joined into one word.
const REVOKING_WORDS: &[&str] = &[
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "UNSUB",
    "CANCEL",
    "END",
    "QUIT",
    "REVOKE",
    "OPTOUT",
    "REMOVE",
    "ARRET",
    "ARRÊT",
    "ARRETE",
    "ARRÊTE",
];
/// Words that make a request polite or urgent without changing it ("STOP please", "stop it now").
const FILLERS: &[&str] = &[
    "PLEASE",
    "PLS",
    "PLZ",
    "NOW",
    "THANKS",
    "THANK",
    "YOU",
    "THX",
    "TY",
    "ME",
    "IT",
    "ALL",
    "IMMEDIATELY",
    "ASAP",
    "OK",
    "OKAY",
    "JUST",
    "RIGHT",
    "AWAY",
    "AGAIN",
    "ANYMORE",
    "NO",
];
/// What the messages are called.
const MESSAGES: &[&str] = &[
    "TEXT",
    "TEXTS",
    "TXT",
    "TXTS",
    "MESSAGE",
    "MESSAGES",
    "MSG",
    "MSGS",
    "SMS",
    "CALLS",
    "ALERTS",
    "REMINDERS",
    "NOTIFICATIONS",
    "SPAM",
    "SUBSCRIPTION",
    "REQUESTS",
    "MENSAJES",
    "TEXTOS",
];
/// Sending them, as the object of STOP or QUIT ("stop texting me").
const SENDING: &[&str] = &[
    "TEXTING",
    "TXTING",
    "MESSAGING",
    "SENDING",
    "CONTACTING",
    "CALLING",
    "SPAMMING",
    "EMAILING",
    "BOTHERING",
    "HARASSING",
];
/// Receiving them, which needs its object ("stop getting these", not "stop getting lost").
const RECEIVING: &[&str] = &["RECEIVING", "GETTING"];
/// Who or what is not to be contacted ("don't text me", "do not text this number").
const OBJECTS: &[&str] = &["ME", "US", "THIS", "AGAIN", "ANYMORE", "EVER", "HERE"];
/// What one is told not to do ("don't text me").
const CONTACT: &[&str] = &[
    "TEXT", "TXT", "MESSAGE", "MSG", "SMS", "CONTACT", "CALL", "EMAIL", "SPAM", "BOTHER", "SEND",
];
/// Words between a verb and its object that change nothing ("end all of these texts").
const DETERMINERS: &[&str] = &[
    "THESE", "THOSE", "THE", "THIS", "ALL", "OF", "YOUR", "UR", "MY", "ANY", "MORE", "FURTHER",
    "FUTURE", "ME", "US", "SUCH",
];
/// A word right before STOP (or UNSUBSCRIBE, OPT OUT) that turns it into no request ("don't stop").
const NEGATIONS: &[&str] = &[
    "DONT", "CANT", "CANNOT", "WONT", "DIDNT", "NOT", "NEVER", "COULDNT", "WOULDNT", "SHOULDNT",
    "NON",
];
/// What a list is called in "take me off your list".
const LISTS: &[&str] = &[
    "LIST",
    "LISTS",
    "MAILING",
    "TEXTING",
    "CONTACT",
    "CONTACTS",
    "SMS",
    "MARKETING",
    "CALL",
];

/// The reply in clauses of upper-case words, apostrophes dropped ("don't" is DONT) and "OPT OUT"
/// (or "opt-out") joined into OPTOUT.
fn clauses(body: &str) -> Vec<Vec<String>> {
    let text: String = body
        .to_uppercase()
        .chars()
        .filter(|c| !matches!(c, '\'' | '\u{2019}' | '\u{02BC}' | '`'))
        .collect();
    text.split(['.', ',', '!', '?', ';', ':', '\n'])
        .map(|clause| {
            let mut words: Vec<String> = Vec::new();
            for w in clause
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                if w == "OUT" && words.last().is_some_and(|p| p == "OPT") {
                    words.pop();
                    words.push("OPTOUT".into());
                } else {
                    words.push(w.to_owned());
                }
            }
            words
        })
        .filter(|words| !words.is_empty())
        .collect()
}

fn clause_revokes(w: &[String]) -> bool {
    let is = |i: usize, set: &[&str]| w.get(i).is_some_and(|x| set.contains(&x.as_str()));
    let word = |i: usize, s: &str| w.get(i).is_some_and(|x| x == s);
    // The first word at or after `i` that is not a determiner.
    let skip = |mut i: usize, set: &[&str]| {
        while is(i, set) {
            i += 1;
        }
        i
    };
    let negated = |i: usize| i > 0 && is(i - 1, NEGATIONS);
    // Nothing but politeness from `i` to the end of the clause.
    let ends = |i: usize| {
        w[i.min(w.len())..]
            .iter()
            .all(|x| FILLERS.contains(&x.as_str()))
    };
    // "STOP please", "Unsubscribe, thanks", "Cancel!": revoking words and politeness only.
    if w.iter().any(|x| REVOKING_WORDS.contains(&x.as_str()))
        && w.iter()
            .all(|x| REVOKING_WORDS.contains(&x.as_str()) || FILLERS.contains(&x.as_str()))
    {
        return true;
    }
    (0..w.len()).any(|i| {
        let after_det = skip(i + 1, DETERMINERS);
        match w[i].as_str() {
            // "stop texting me", "quit sending these", "stop these texts", "stop the messages".
            "STOP" | "QUIT" => {
                let received = is(i + 1, RECEIVING)
                    && (is(skip(i + 2, DETERMINERS), MESSAGES)
                        || is(i + 2, &["THESE", "THOSE", "THEM", "THIS"])
                        || ends(i + 2));
                !negated(i) && (is(i + 1, SENDING) || received || is(after_det, MESSAGES))
            }
            // "end these texts", "cancel my subscription", "cancel the messages".
            "END" | "CANCEL" => !negated(i) && is(after_det, MESSAGES),
            // The FCC's words that mean nothing else in a reply.
            "UNSUBSCRIBE" | "UNSUB" | "OPTOUT" | "REVOKE" => !negated(i),
            // "opt me out".
            "OPT" => word(i + 1, "ME") && word(i + 2, "OUT"),
            // "don't text me", "do not contact me", "never text me again".
            "DONT" | "NEVER" | "NOT" => {
                (is(i + 1, CONTACT) && (is(i + 2, OBJECTS) || ends(i + 2)))
                    // "I don't want these texts", "do not want any more messages".
                    || (word(i + 1, "WANT") && is(skip(i + 2, DETERMINERS), MESSAGES))
            }
            // "no more texts", "no more texting", "no más mensajes".
            "NO" => {
                is(i + 1, &["MORE", "MAS", "MÁS"])
                    && (is(skip(i + 2, DETERMINERS), MESSAGES) || is(i + 2, SENDING))
            }
            // "take me off your list", "take my number off the list", "take me off".
            "TAKE" => {
                let off = if word(i + 1, "ME") {
                    i + 2
                } else if word(i + 1, "MY") && word(i + 2, "NUMBER") {
                    i + 3
                } else {
                    return false;
                };
                word(off, "OFF") && {
                    let rest = skip(off + 1, DETERMINERS);
                    ends(rest) || is(rest, LISTS)
                }
            }
            // "remove me", "remove my number", "delete my number".
            "REMOVE" | "DELETE" => {
                word(i + 1, "ME") || (word(i + 1, "MY") && word(i + 2, "NUMBER"))
            }
            "LEAVE" => word(i + 1, "ME") && word(i + 2, "ALONE"),
            // "withdraw my consent" ("revoke my consent" is caught by REVOKE).
            "WITHDRAW" => word(skip(i + 1, DETERMINERS), "CONSENT"),
            // "I want to stop", "I'd like to quit".
            "WANT" | "WISH" | "LIKE" | "NEED" => {
                word(i + 1, "TO") && is(i + 2, &["STOP", "QUIT"]) && ends(i + 3)
            }
            _ => false,
        }
    })
}

fn normalise(body: &str) -> String {
    body.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
}

#[cfg(test)]
mod tests;
