//! The business's review URL. Our tracked link `/r/{token}` redirects to it, so it must be a
//! plain https page on a real domain: carriers filter public shorteners (sms.md 3.4), and
//! credentials in a URL would be shown to every recipient.

use super::codes::{LINK_SHORTENER, REVIEW_URL_INVALID};
use crate::schema::Violation;
use std::sync::LazyLock;
use url::{Host, Url};

const PATH: &str = "/business/review_url";

static SHORTENERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    include_str!("../../data/link_shorteners.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
});

/// Problems with `business.review_url`; the path is `/business/review_url`.
pub fn check_review_url(raw: &str) -> Vec<Violation> {
    let invalid = |msg: &str| Violation::new(PATH, msg).with_code(REVIEW_URL_INVALID);
    let v = |msg: &str| vec![invalid(msg)];
    // The URL parser silently drops tabs and newlines; refuse them instead of redirecting to
    // something other than what the business typed.
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return v("must not contain spaces or control characters");
    }
    let Ok(url) = Url::parse(raw) else {
        return v("is not a valid URL");
    };
    let mut out = Vec::new();
    if url.scheme() != "https" {
        out.push(invalid("must use https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        out.push(invalid("must not contain a user name or password"));
    }
    match url.host() {
        Some(Host::Domain(host)) if host.trim_end_matches('.').contains('.') => {
            if let Some(s) = shortener(host) {
                out.push(
                    Violation::new(
                        PATH,
                        format!(
                            "{s} is a public link shortener, which carriers filter; use the review \
                             page's full URL (e.g. https://search.google.com/local/writereview?placeid=...)"
                        ),
                    )
                    .with_code(LINK_SHORTENER),
                );
            }
        }
        _ => out.push(invalid("must name a public domain, not an IP address")),
    }
    out
}

/// The shortener domain `host` belongs to, if any (the host itself or a parent domain).
fn shortener(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    SHORTENERS
        .iter()
        .copied()
        .find(|s| host == *s || host.strip_suffix(s).is_some_and(|rest| rest.ends_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(url: &str) -> Vec<String> {
        let v = check_review_url(url);
        assert!(v.iter().all(|v| v.path == PATH), "{v:?}");
        v.into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn ordinary_review_pages_pass() {
        for url in [
            "https://search.google.com/local/writereview?placeid=ChIJN1t_tDeuEmsRUsoyG83frY4",
            "https://g.page/r/CabcDEF123/review",
            "https://www.yelp.com/writeareview/biz/abc",
            "https://uk.trustpilot.com/evaluate/salon.example",
            "https://salon.example./reviews",
        ] {
            assert_eq!(messages(url), Vec::<String>::new(), "{url}");
        }
    }

    #[test]
    fn public_shorteners_and_their_subdomains_are_refused() {
        for url in [
            "https://bit.ly/3abc",
            "https://BIT.LY/3abc",
            "https://t.co/xyz",
            "https://maps.app.goo.gl/abc",
            "https://www.tinyurl.com/abc",
            "https://rb.gy/abc",
            "https://bit.ly./abc",
        ] {
            let m = messages(url);
            assert_eq!(m.len(), 1, "{url}: {m:?}");
            assert!(m[0].contains("link shortener"), "{url}: {m:?}");
        }
    }

    #[test]
    fn lookalike_hosts_are_not_mistaken_for_shorteners() {
        for url in [
            "https://notbit.ly/a",
            "https://bit.ly.example.com/a",
            "https://at.co/x",
        ] {
            assert_eq!(messages(url), Vec::<String>::new(), "{url}");
        }
    }

    #[test]
    fn http_credentials_ip_hosts_and_junk_are_refused() {
        assert_eq!(messages("http://salon.example/r"), ["must use https"]);
        assert_eq!(
            messages("https://user:pw@salon.example/r"),
            ["must not contain a user name or password"]
        );
        assert_eq!(messages("https://user@salon.example/r").len(), 1);
        assert_eq!(messages("https://203.0.113.9/r").len(), 1);
        assert_eq!(messages("https://localhost/r").len(), 1);
        assert_eq!(messages("not a url").len(), 1);
        assert_eq!(messages("https://salon.example/a\tb").len(), 1);
        assert_eq!(messages("https://").len(), 1);
        // Every problem at once.
        assert_eq!(messages("http://u:p@bit.ly/x").len(), 3);
    }

    #[test]
    fn shortener_list_is_clean() {
        assert!(SHORTENERS.len() >= 20);
        for s in SHORTENERS.iter() {
            assert!(s.contains('.') && *s == s.to_ascii_lowercase(), "{s}");
        }
    }
}
