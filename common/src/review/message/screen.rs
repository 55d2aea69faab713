//! What a business may not put in the words we text for it (issue 10): only `{review_link}` may
//! carry a link, so literal URLs, domains and shorteners are refused, and so are control and
//! invisible characters and look-alike letters used to dodge that rule ("ｂｉｔ．ｌｙ", Cyrillic "о"
//! in "gооgle.com", "bit[.]ly", "bit dot ly"). Carriers hold the sender of a phishing text to
//! account; our number must not be one.

use unicode_normalization::UnicodeNormalization;

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
pub fn problems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = text.chars().find(|c| c.is_control() && *c != '\n') {
        out.push(format!(
            "contains a control character (U+{:04X}); only printable text and line breaks may be sent",
            u32::from(c)
        ));
    }
    if let Some(c) = text.chars().find(|c| is_invisible(*c)) {
        out.push(format!(
            "contains an invisible character (U+{:04X}), which could hide a link or a word",
            u32::from(c)
        ));
    }
    if text
        .split(|c: char| !c.is_alphanumeric())
        .any(mixes_scripts)
    {
        out.push(
            "mixes look-alike letters from another alphabet into a Latin word (e.g. a Cyrillic \
             \u{43e} for o); write it in one alphabet"
                .to_owned(),
        );
    }
    let skeleton = skeleton(text);
    if let Some(shortener) = SHORTENERS.iter().find(|s| contains_domain(&skeleton, s)) {
        out.push(format!(
            "contains a link shortener ({shortener}); links go only in {{review_link}}"
        ));
    } else if has_link(&skeleton) {
        out.push(
            "contains a web address; links are not allowed in the text, only {review_link} may \
             carry one"
                .to_owned(),
        );
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
mod tests {
    use super::problems;

    #[test]
    fn plain_business_words_pass() {
        for text in [
            "Hi {first_name}, thanks for choosing us! Would you leave a review? ",
            "Thanks for visiting. We loved having you, e.g. at 9 a.m. on Main St. See you!",
            "Dr. Smith and the team at No. 5 say thanks.",
            "Questions? Call us.\nHave a great day!",
            "We loved it. To book again, just reply. Me and the team thank you.",
        ] {
            assert!(problems(text).is_empty(), "{text}: {:?}", problems(text));
        }
    }

    #[test]
    fn links_domains_and_shorteners_in_any_disguise_are_refused() {
        for text in [
            "verify at https://bit.ly/x9 now",
            "go to www.example.org",
            "visit bit.ly/x9",
            "visit example.com today",
            "visit example . com",
            "visit bit[.]ly/x9",
            "visit bit dot ly/x9",
            "visit \u{ff42}\u{ff49}\u{ff54}\u{ff0e}\u{ff4c}\u{ff59}/x9",
            "see hxxps://evil.example",
            "visit tinyurl.com/abc",
            "myshop.co",
        ] {
            assert!(!problems(text).is_empty(), "{text} passed");
        }
        assert!(problems("visit bit.ly/x9")[0].contains("shortener"));
    }

    #[test]
    fn control_invisible_and_look_alike_characters_are_refused() {
        assert!(problems("ring\u{7} ring")[0].contains("U+0007"));
        assert!(problems("bit\u{200B}.ly")[0].contains("invisible"));
        // "g\u{43e}\u{43e}gle" is Latin g and l with Cyrillic o's.
        assert!(problems("g\u{43e}\u{43e}gle")[0].contains("alphabet"));
        // A wholly Cyrillic word is a word, not a disguise.
        assert!(problems("\u{421}\u{43f}\u{430}\u{441}\u{438}\u{431}\u{43e}").is_empty());
    }
}
