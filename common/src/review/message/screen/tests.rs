//! What the screen refuses in a text, and what it lets through.

use super::problems;
use crate::review::codes;

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
    assert!(problems("visit bit.ly/x9")[0].message.contains("shortener"));
}

#[test]
fn control_invisible_and_look_alike_characters_are_refused() {
    assert!(problems("ring\u{7} ring")[0].message.contains("U+0007"));
    assert!(problems("bit\u{200B}.ly")[0].message.contains("invisible"));
    // "g\u{43e}\u{43e}gle" is Latin g and l with Cyrillic o's.
    assert!(
        problems("g\u{43e}\u{43e}gle")[0]
            .message
            .contains("alphabet")
    );
    // A wholly Cyrillic word is a word, not a disguise.
    assert!(problems("\u{421}\u{43f}\u{430}\u{441}\u{438}\u{431}\u{43e}").is_empty());
}

#[test]
fn look_alike_links_and_keywords_in_another_alphabet_are_refused() {
    for text in [
        // "аррӏе.сом": every letter Cyrillic.
        "log in at \u{430}\u{440}\u{440}\u{4cf}\u{435}.\u{441}\u{43e}\u{43c} now",
        // Greek "αρρle.com" has Latin letters too; "τ.co" is a Greek t.
        "\u{3b1}\u{3c1}\u{3c1}.com",
        "see \u{3c4}.co/x9",
        // Cyrillic "һттр://" and "віт.ӏу".
        "\u{4bb}\u{442}\u{442}\u{440}://x",
        "\u{432}\u{456}\u{442}.\u{4cf}\u{443}/x9",
    ] {
        assert!(!problems(text).is_empty(), "{text} passed");
    }
    let found = problems("\u{430}\u{440}\u{440}\u{4cf}\u{435}.\u{441}\u{43e}\u{43c}");
    assert!(
        found.len() == 1
            && found[0].code == codes::LINK_NOT_ALLOWED
            && found[0]
                .message
                .contains("web address in look-alike letters"),
        "{found:?}"
    );
    // "ЅТОР" in Cyrillic: a reply copied from it is no STOP.
    let found = problems("Reply \u{405}\u{422}\u{41e}\u{420} to opt out");
    assert!(
        found
            .iter()
            .any(|p| p.code == codes::LOOKALIKE_CHARACTERS && p.message.contains("writes STOP")),
        "{found:?}"
    );
    // Real words in other alphabets, prices and abbreviations pass.
    for text in [
        "\u{421}\u{43f}\u{430}\u{441}\u{438}\u{431}\u{43e}, \u{442}.\u{435}. \u{43c}\u{430}\u{43c}\u{430}",
        "\u{39a}\u{3b1}\u{3bb}\u{3b7}\u{3bc}\u{3ad}\u{3c1}\u{3b1}! \u{3ba}.\u{3bb}\u{3c0}.",
        "Caf\u{e9} au lait for $12.50, stra\u{df}e 5.",
    ] {
        assert!(problems(text).is_empty(), "{text}: {:?}", problems(text));
    }
}
