//! `X-Twilio-Signature`: how Twilio signs the webhooks it sends us (status callbacks, inbound
//! messages), so the api can refuse forged posts.
//!
//! The signature is HMAC-SHA1, keyed with the account's auth token, over the full URL Twilio
//! requested followed by every form parameter sorted by name (and by value for repeated names),
//! each written as name then value with no separator; base64, standard alphabet, padded.
//!
//! Verify against the public URL as configured in Twilio, rebuilt from our configuration, never
//! from the `Host` a proxy hands the app. Hash every parameter that arrived: Twilio adds new ones
//! without notice, so a fixed list would reject genuine posts.

use base64::{Engine, engine::general_purpose::STANDARD};

/// Twilio's error for a send to a number that texted STOP to the sender (in a refused send and
/// in a delivery report alike): the recipient opted out.
pub const OPTED_OUT_ERROR: i32 = 21610;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

/// The signature Twilio would send for a POST of `params` (form fields, in any order) to `url`.
/// For a GET, or a JSON body signed through `bodySHA256` in the query, pass no params.
pub fn signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()) else {
        // HMAC takes keys of any length, so this cannot happen; an empty answer matches no header.
        return String::new();
    };
    mac.update(url.as_bytes());
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    // Byte order of UTF-8 is code-point order, which is what Twilio's own validators sort by.
    sorted.sort();
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    STANDARD.encode(mac.finalize().into_bytes())
}

/// True when `header` (the `X-Twilio-Signature` value) signs this request. Twilio is not
/// consistent about default ports, so the URL is tried as given and with its default port
/// (`:443` for https, `:80` for http) added or removed. Comparisons run in constant time.
pub fn verify(auth_token: &str, url: &str, params: &[(String, String)], header: &str) -> bool {
    if header.is_empty() {
        return false;
    }
    let matches = |candidate: &str| {
        let expected = signature(auth_token, candidate, params);
        !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(header.as_bytes()))
    };
    let as_given = matches(url);
    // Both are computed whatever the first says, so timing does not tell which spelling matched.
    let other = other_port_spelling(url).is_some_and(|u| matches(&u));
    as_given | other
}

/// The same URL with its default port written out if it was omitted, or left out if it was
/// written; `None` for an explicit non-default port or a scheme other than http(s).
fn other_port_spelling(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => "443",
        "http" => "80",
        _ => return None,
    };
    let authority_start = scheme.len() + 3;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority_end = authority_start + authority_len;
    let authority = &url[authority_start..authority_end];
    // Credentials come before the last '@'; an IPv6 host is bracketed and holds colons itself.
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let port = if host_port.ends_with(']') {
        None
    } else {
        host_port.rsplit_once(':').map(|(_, port)| port)
    };
    match port {
        None => Some(format!(
            "{}:{default_port}{}",
            &url[..authority_end],
            &url[authority_end..]
        )),
        Some(port) if port == default_port => {
            let without = authority_end - port.len() - 1;
            Some(format!("{}{}", &url[..without], &url[authority_end..]))
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "12345";
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";

    fn params() -> Vec<(String, String)> {
        [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn twilio_documented_vector_signs_and_verifies() {
        let expected = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
        assert_eq!(signature(TOKEN, URL, &params()), expected);
        let mut shuffled = params();
        shuffled.reverse();
        assert_eq!(signature(TOKEN, URL, &shuffled), expected);
        assert!(verify(TOKEN, URL, &params(), expected));
    }

    #[test]
    fn repeated_names_are_sorted_by_value() {
        let a = [
            ("Media".to_owned(), "b".to_owned()),
            ("Media".to_owned(), "a".to_owned()),
        ];
        let b = [a[1].clone(), a[0].clone()];
        assert_eq!(signature(TOKEN, URL, &a), signature(TOKEN, URL, &b));
    }

    #[test]
    fn default_port_is_accepted_written_or_omitted() {
        let with_port = "https://mycompany.com:443/myapp.php?foo=1&bar=2";
        let signed_with_port = signature(TOKEN, with_port, &params());
        let signed_without = signature(TOKEN, URL, &params());
        assert_ne!(signed_with_port, signed_without);
        for url in [URL, with_port] {
            assert!(verify(TOKEN, url, &params(), &signed_with_port), "{url}");
            assert!(verify(TOKEN, url, &params(), &signed_without), "{url}");
        }
        let http = "http://user:pw@example.com/hook";
        let signed = signature(TOKEN, "http://user:pw@example.com:80/hook", &params());
        assert!(verify(TOKEN, http, &params(), &signed));
    }

    #[test]
    fn port_spellings_are_computed_only_for_default_ports() {
        assert_eq!(
            other_port_spelling("https://a.example?x=1").as_deref(),
            Some("https://a.example:443?x=1")
        );
        assert_eq!(
            other_port_spelling("HTTP://a.example:80/p").as_deref(),
            Some("HTTP://a.example/p")
        );
        assert_eq!(
            other_port_spelling("https://[::1]/p").as_deref(),
            Some("https://[::1]:443/p")
        );
        assert_eq!(other_port_spelling("https://a.example:8443/p"), None);
        assert_eq!(other_port_spelling("ftp://a.example/p"), None);
    }

    #[test]
    fn any_change_fails_verification() {
        let good = signature(TOKEN, URL, &params());
        let mut changed = params();
        changed[2].1 = "1235".into();
        assert!(!verify(TOKEN, URL, &changed, &good));
        let mut missing = params();
        missing.remove(0);
        assert!(!verify(TOKEN, URL, &missing, &good));
        let mut extra = params();
        extra.push(("OptOutType".into(), "STOP".into()));
        assert!(!verify(TOKEN, URL, &extra, &good));
        assert!(!verify("54321", URL, &params(), &good));
        assert!(!verify(
            TOKEN,
            "https://mycompany.com/myapp.php?foo=1",
            &params(),
            &good
        ));
        assert!(!verify(TOKEN, URL, &params(), &good[..good.len() - 1]));
        assert!(!verify(TOKEN, URL, &params(), ""));
    }
}
