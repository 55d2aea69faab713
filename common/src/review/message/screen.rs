//! What a business may not put in the words we text for it (issue 10): only `{review_link}` may
//! carry a link, so literal URLs, domains and shorteners are refused, and so are control and
//! invisible characters and look-alike letters used to dodge that rule ("ｂｉｔ．ｌｙ", Cyrillic "о"
//! in "gооgle.com", a wholly Cyrillic "аррӏе.сом", "bit[.]ly", "bit dot ly"), or to write a STOP
//! that is no keyword. Carriers hold the sender of a phishing text to account; our number must
//! not be one.

use crate::review::codes;
use crate::schema::Violation;
use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection::skeleton as confusable;

/// One problem with a piece of text, and the code it carries in a 422.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: &'static str,
    pub message: String,
}

impl Finding {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The problem as a violation at `path`.
    pub fn at(self, path: &str) -> Violation {
        Violation::new(path, self.message).with_code(self.code)
    }
}

/// Top-level domains that make an address when written right after a dot ("shop.online").
/// Any other two-letter label there (a country code: "bit.ly", "t.co") counts too.
const COMMON_TLDS: &[&str] = &[
    "com", "net", "org", "info", "biz", "io", "co", "me", "ly", "app", "dev", "xyz", "link",
    "site", "online", "shop", "store", "top", "club", "us", "gl", "gd", "cc", "tv", "ws", "gy",
    "to", "ai", "click", "live", "page", "win", "vip", "today", "icu", "buzz", "rest",
];

/// The ones that still read as an address when spaced out ("example . com"): none of them is an
/// English word that could start a sentence ("Thanks. To book again…").
const SPACED_TLDS: &[&str] = &[
    "com", "net", "org", "info", "biz", "io", "ly", "xyz", "online", "icu", "buzz",
];

/// Shorteners named in the refusal, for a clearer message (the domain rule catches them anyway).
const SHORTENERS: &[&str] = &[
    "bit.ly",
    "tinyurl",
    "t.co",
    "goo.gl",
    "ow.ly",
    "is.gd",
    "buff.ly",
    "rebrand.ly",
    "cutt.ly",
    "shorturl",
    "tiny.cc",
    "rb.gy",
    "t.ly",
    "s.id",
    "bl.ink",
    "short.io",
];

/// Every problem with `text` (a template's literal words, or a name put into the message).
pub fn problems(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(c) = text.chars().find(|c| c.is_control() && *c != '\n') {
        out.push(Finding::new(
            codes::CONTROL_CHARACTERS,
            format!(
                "contains a control character (U+{:04X}); only printable text and line breaks \
                 may be sent",
                u32::from(c)
            ),
        ));
    }
    if let Some(c) = text.chars().find(|c| is_invisible(*c)) {
        out.push(Finding::new(
            codes::CONTROL_CHARACTERS,
            format!(
                "contains an invisible character (U+{:04X}), which could hide a link or a word",
                u32::from(c)
            ),
        ));
    }
    if text
        .split(|c: char| !c.is_alphanumeric())
        .any(mixes_scripts)
    {
        out.push(Finding::new(
            codes::LOOKALIKE_CHARACTERS,
            "mixes look-alike letters from another alphabet into a Latin word (e.g. a Cyrillic \
             \u{43e} for o); write it in one alphabet",
        ));
    }
    let plain = skeleton(text);
    if let Some(shortener) = SHORTENERS.iter().find(|s| contains_domain(&plain, s)) {
        out.push(Finding::new(
            codes::LINK_SHORTENER,
            format!("contains a link shortener ({shortener}); links go only in {{review_link}}"),
        ));
    } else if has_link(&plain) {
        out.push(Finding::new(
            codes::LINK_NOT_ALLOWED,
            "contains a web address; links are not allowed in the text, only {review_link} may \
             carry one",
        ));
    } else if has_link(&skeleton(&as_latin(text))) {
        out.push(Finding::new(
            codes::LINK_NOT_ALLOWED,
            "writes a web address in look-alike letters from another alphabet (e.g. a Cyrillic \
             \u{430}\u{440}\u{440}\u{4cf}\u{435}.\u{441}\u{43e}\u{43c}); links go only in {review_link}",
        ));
    }
    if let Some(word) = lookalike_keyword(text) {
        out.push(Finding::new(
            codes::LOOKALIKE_CHARACTERS,
            format!(
                "writes {word} in look-alike letters from another alphabet; a reply copied from \
                 it would not be the keyword, so write it in Latin letters"
            ),
        ));
    }
    out
}

/// Reply keywords a customer might copy from the message (sms.md 2.3).
const KEYWORDS: &[&str] = &[
    "stop",
    "stopall",
    "unsubscribe",
    "cancel",
    "end",
    "quit",
    "revoke",
    "optout",
    "start",
    "unstop",
    "help",
    "info",
];

/// A word that is not plain ASCII but reads as a reply keyword ("ЅТОР" in Cyrillic), upper-cased.
fn lookalike_keyword(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_ascii())
        .map(|w| as_latin(&w.nfkc().collect::<String>()))
        .find(|w| KEYWORDS.contains(&w.as_str()))
        .map(|w| w.to_uppercase())
}

/// Every non-ASCII character replaced by the ASCII it is confusable with under Unicode's UTS #39
/// (the `unicode-security` crate of unicode-rs), lower-cased: Cyrillic "аррӏе" and Greek "αρρle"
/// read "apple". The character's own skeleton is tried first, then its capital's, because UTS
/// #39 maps some lower-case letters to IPA or small capitals rather than Latin (Cyrillic "м" to
/// "ʍ", but "М" to "M"). Characters with no ASCII look-alike stay, and ASCII is left alone, so
/// ordinary text reads as before (UTS #39 would turn "m" into "rn").
fn as_latin(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let upper: String = c.to_uppercase().collect();
        let ascii = [c.to_string(), upper].into_iter().find_map(|form| {
            let mapped: String = confusable(&form).collect();
            (!mapped.is_empty()
                && mapped
                    .chars()
                    .all(|m| m.is_ascii_alphanumeric() || m.is_ascii_punctuation()))
            .then(|| mapped.to_ascii_lowercase())
        });
        match ascii {
            Some(latin) => out.push_str(&latin),
            None => out.push(c),
        }
    }
    out
}

/// Zero-width, joiner, bidi-override and other format characters, and non-standard spaces.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
        | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}')
}

/// A word with Latin letters and letters of a script whose shapes copy Latin ones.
fn mixes_scripts(word: &str) -> bool {
    let latin = word.chars().any(|c| c.is_ascii_alphabetic());
    let lookalike = word.chars().any(|c| {
        matches!(c,
            '\u{0370}'..='\u{03FF}'   // Greek
            | '\u{0400}'..='\u{052F}' // Cyrillic
            | '\u{0530}'..='\u{058F}' // Armenian
            | '\u{13A0}'..='\u{13FF}' // Cherokee
        )
    });
    latin && lookalike
}

/// Lower-case NFKC (full-width and styled letters become plain ones), with the usual ways of
/// writing a dot in disguise turned into a dot.
fn skeleton(text: &str) -> String {
    let mut s: String = text.nfkc().collect::<String>().to_lowercase();
    for (from, to) in [
        ("\u{3002}", "."),
        ("\u{ff61}", "."),
        ("\u{2024}", "."),
        ("[.]", "."),
        ("(.)", "."),
        ("{.}", "."),
        ("[dot]", "."),
        ("(dot)", "."),
        ("{dot}", "."),
        (" dot ", "."),
        ("hxxp", "http"),
    ] {
        s = s.replace(from, to);
    }
    s
}

fn has_link(s: &str) -> bool {
    if s.contains("http:") || s.contains("https:") || s.contains("www.") || s.contains("://") {
        return true;
    }
    let chars: Vec<char> = s.chars().collect();
    chars
        .iter()
        .enumerate()
        .any(|(i, c)| *c == '.' && dot_joins_domain(&chars, i))
}

/// Whether the dot at `i` sits between a label and a top-level domain: "bit.ly", "shop.com", or
/// spaced "example . com" with a common TLD.
fn dot_joins_domain(chars: &[char], i: usize) -> bool {
    let label_char = |c: &char| c.is_alphanumeric() || *c == '-';
    // Left label, skipping spaces before the dot.
    let mut l = i;
    let mut spaced = false;
    while l > 0 && chars[l - 1] == ' ' {
        l -= 1;
        spaced = true;
    }
    let left_len = chars[..l]
        .iter()
        .rev()
        .take_while(|c| label_char(c))
        .count();
    if left_len == 0 {
        return false;
    }
    let mut r = i + 1;
    while r < chars.len() && chars[r] == ' ' {
        r += 1;
        spaced = true;
    }
    let tld: String = chars[r..]
        .iter()
        .take_while(|c| c.is_alphabetic())
        .collect();
    // A TLD is followed by the end, a path, a port or punctuation, never by more letters or digits.
    let after = chars.get(r + tld.chars().count());
    if after.is_some_and(|c| c.is_alphanumeric()) {
        return false;
    }
    if spaced {
        return SPACED_TLDS.contains(&tld.as_str());
    }
    COMMON_TLDS.contains(&tld.as_str()) || (tld.chars().count() == 2 && left_len >= 2)
}

fn contains_domain(skeleton: &str, domain: &str) -> bool {
    let squeezed: String = skeleton.chars().filter(|c| *c != ' ').collect();
    squeezed.contains(domain)
}

#[cfg(test)]
mod tests;
