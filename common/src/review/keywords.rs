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

/// CONTRACT 9's list, plus the carriers' and the note's extra opt-out words (AWS: OPT-OUT, REMOVE,
/// ARRET, TD; Spanish and French replies).
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

/// Free text a reasonable person would read as "stop messaging me" ("Please stop texting me",
/// "unsubscribe me"). The FCC counts such replies as revocation, so the inbound handler should
/// suppress the phone and flag the message for review even though it is not a keyword.
pub fn reads_as_opt_out(body: &str) -> bool {
    if classify(body) == Keyword::OptOut {
        return true;
    }
    let text = normalise(body);
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let phrase = |p: &[&str]| words.windows(p.len()).any(|w| w == p);
    // "Stop by" is a visit, not a revocation.
    let stop = words
        .iter()
        .enumerate()
        .any(|(i, w)| *w == "STOP" && words.get(i + 1) != Some(&"BY"));
    let no_more = ["TEXT", "TEXTS", "MESSAGES", "MSGS"]
        .iter()
        .any(|w| phrase(&["NO", "MORE", w]));
    // Apostrophes split words, so "don't" arrives as DON, T.
    stop || has("UNSUBSCRIBE")
        || has("OPTOUT")
        || phrase(&["OPT", "OUT"])
        || phrase(&["REMOVE", "ME"])
        || phrase(&["DON", "T", "TEXT"])
        || phrase(&["DONT", "TEXT"])
        || no_more
}

fn normalise(body: &str) -> String {
    body.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_opt_out_words_match_in_any_case_with_whitespace() {
        for body in [
            "STOP",
            "stop",
            " Stop \n",
            "STOPALL",
            "stop all",
            "STOP  ALL",
            "unsubscribe",
            "Cancel",
            "END",
            "quit",
            "Revoke",
            "OPTOUT",
            "opt out",
            "Opt\tOut",
        ] {
            assert_eq!(classify(body), Keyword::OptOut, "{body:?}");
        }
    }

    #[test]
    fn extra_opt_out_words_from_the_note_match_too() {
        for body in [
            "OPT-OUT", "remove", "arret", "Arrête", "TD", "no más", "No mas",
        ] {
            assert_eq!(classify(body), Keyword::OptOut, "{body:?}");
        }
    }

    #[test]
    fn trailing_punctuation_is_forgiven_for_opt_out_and_help_only() {
        assert_eq!(classify("Stop!"), Keyword::OptOut);
        assert_eq!(classify("STOP."), Keyword::OptOut);
        assert_eq!(classify("help?"), Keyword::Help);
        assert_eq!(classify("Yes!"), Keyword::Other);
        assert_eq!(classify("yes"), Keyword::OptIn);
    }

    #[test]
    fn opt_in_and_help_words_are_recognised() {
        for body in ["START", "start", " Unstop ", "YES"] {
            assert_eq!(classify(body), Keyword::OptIn, "{body:?}");
        }
        for body in ["HELP", "help", "Info"] {
            assert_eq!(classify(body), Keyword::Help, "{body:?}");
        }
    }

    #[test]
    fn keywords_inside_longer_messages_are_not_keywords() {
        for body in [
            "STOP please",
            "please stop",
            "I want to start",
            "yes please",
            "",
            "   ",
            "stopp",
        ] {
            assert_eq!(classify(body), Keyword::Other, "{body:?}");
        }
    }

    #[test]
    fn free_text_revocations_are_flagged_but_ordinary_replies_are_not() {
        for body in [
            "Please stop texting me",
            "unsubscribe me now",
            "remove me from your list",
            "Don't text me again",
            "Don’t text me",
            "no more texts",
            "I want to opt out",
            "STOP",
        ] {
            assert!(reads_as_opt_out(body), "{body:?}");
        }
        for body in [
            "Thanks, great service!",
            "I'll stop by next week",
            "No more questions, thanks",
            "unstoppable",
        ] {
            assert!(!reads_as_opt_out(body), "{body:?}");
        }
    }
}
