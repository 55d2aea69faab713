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

/// Replies read as revocation: the FCC's words in reply to a text (47 CFR 64.1200(a)(10)),
/// the carriers' keywords with politeness around them, and plain words a reasonable person
/// reads as "stop messaging me".
const REVOKE: &[&str] = &[
    // The FCC's listed words, alone or with politeness around them.
    "STOP",
    "Stop please",
    "please stop",
    "STOP STOP STOP",
    "stop it",
    "Stop, thanks",
    "Stop now!!",
    "No, stop.",
    "quit",
    "Quit please",
    "END",
    "end it please",
    "revoke",
    "I revoke my consent",
    "revoke consent",
    "opt out",
    "Opt-out please",
    "opt me out",
    "How do I opt out?",
    "cancel",
    "Cancel!",
    "cancel please",
    "unsubscribe",
    "unsubscribe please",
    "Please unsubscribe me",
    "unsubscribe me now",
    "Who is this? STOP",
    "Wrong number, stop",
    // Plain words.
    "Please stop texting me",
    "stop texting",
    "Stop sending me these",
    "stop messaging me",
    "stop contacting me",
    "stop calling me",
    "Stop these texts",
    "stop the messages please",
    "How do I stop getting these?",
    "quit texting me",
    "Quit sending me messages",
    "end these texts",
    "End all of these messages",
    "cancel my subscription",
    "cancel these texts",
    "do not text me",
    "Do not text this number",
    "don't text me",
    "Don\u{2019}t text me",
    "dont text me again",
    "don't message me",
    "don't contact me",
    "Don't call me",
    "never text me again",
    "I don't want these texts",
    "I do not want any more messages",
    "no more texts",
    "No more messages please",
    "no more texting",
    "No más mensajes",
    "take me off your list",
    "Take me off the list",
    "take me off",
    "take my number off your list",
    "remove me from your list",
    "remove my number",
    "delete my number",
    "leave me alone",
    "Please leave me alone.",
    "withdraw my consent",
    "I want to stop",
    "I'd like to stop, thanks",
];

/// Replies that are not revocation: STOP in another sense, FCC words about something else,
/// and the ambiguous ones a business should read (they are recorded, not acted on).
const KEEP: &[&str] = &[
    "Thanks, great service!",
    "I'll stop by next week",
    "Stop by anytime",
    "Can you stop by Tuesday?",
    "don't stop",
    "Please don't stop, love these",
    "I can't stop smiling",
    "can't stop texting my friends about you",
    "Never stop being great",
    "No more questions, thanks",
    "unstoppable",
    "The service was non stop great",
    "cancel my appointment",
    "I need to cancel my booking",
    "In the end it was fine",
    "The end",
    "I quit smoking thanks to you",
    "take me off the waitlist",
    "I don't text much",
    "I don't text my friends",
    "remind me later",
    "not interested",
    "wrong number",
    "who is this?",
    "",
    "   ",
];

#[test]
fn plain_words_revocations_are_read_and_other_replies_are_not() {
    let missed: Vec<&str> = REVOKE
        .iter()
        .copied()
        .filter(|b| !reads_as_opt_out(b))
        .collect();
    assert!(missed.is_empty(), "not read as opt-outs: {missed:?}");
    let wrong: Vec<&str> = KEEP
        .iter()
        .copied()
        .filter(|b| reads_as_opt_out(b))
        .collect();
    assert!(wrong.is_empty(), "wrongly read as opt-outs: {wrong:?}");
}
