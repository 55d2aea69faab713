//! The console's sign-in: an operator types a token into the login form, and gets a cookie that
//! names them without carrying the token: `{expires}.{mac}.{name}`, the MAC an HMAC-SHA256 by
//! that operator's token over the name and the expiry. Nothing is kept on the server, so any
//! replica accepts it, and taking a token out of `ADMIN_TOKENS` ends its sessions at once.
//!
//! The cookie is `HttpOnly` (no script reads it) and `SameSite=Strict` (no other site's page
//! can send it with a form, which with the Origin check in `mod.rs` keeps cross-site posts out).
//! It is not `Secure`: the admin listener speaks plain HTTP on loopback or inside a cluster.

use crate::admin::Operator;
use grove_common::config::AdminToken;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const COOKIE: &str = "grove_console";
/// How long a sign-in lasts.
pub const LIFETIME_S: i64 = 12 * 3600;

fn mac(token: &AdminToken, name: &str, expires: i64) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(token.secret.expose().as_bytes()).ok()?;
    mac.update(format!("grove-console|{name}|{expires}").as_bytes());
    Some(mac)
}

/// The cookie's value for `operator`, valid until `now + LIFETIME_S`.
pub fn issue(tokens: &[AdminToken], operator: &Operator, now: i64) -> Option<String> {
    let token = tokens.iter().find(|t| t.name == operator.0)?;
    let expires = now + LIFETIME_S;
    let tag = mac(token, &operator.0, expires)?.finalize().into_bytes();
    Some(format!("{expires}.{}.{}", hex::encode(tag), operator.0))
}

/// The operator a cookie's value names, if its MAC verifies (in constant time) and it has not
/// expired.
pub fn verify(tokens: &[AdminToken], value: &str, now: i64) -> Option<Operator> {
    let mut parts = value.splitn(3, '.');
    let expires: i64 = parts.next()?.parse().ok()?;
    let tag = hex::decode(parts.next()?).ok()?;
    let name = parts.next()?;
    if expires <= now {
        return None;
    }
    let token = tokens.iter().find(|t| t.name == name)?;
    mac(token, name, expires)?.verify_slice(&tag).ok()?;
    Some(Operator(name.to_owned()))
}

/// The cookie's value among a request's `Cookie` headers.
pub fn read(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == COOKIE).then_some(v)
        })
}

/// `Set-Cookie` for a sign-in (`Some`) or a sign-out (`None`).
pub fn set_cookie(value: Option<&str>) -> String {
    match value {
        Some(v) => format!("{COOKIE}={v}; Path=/; HttpOnly; SameSite=Strict; Max-Age={LIFETIME_S}"),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grove_common::config::Secret;

    fn tokens() -> Vec<AdminToken> {
        vec![
            AdminToken {
                name: "alice".into(),
                secret: Secret::new("alice-0123456789abcdef"),
            },
            AdminToken {
                name: "bob.ops".into(),
                secret: Secret::new("bob-0123456789abcdef"),
            },
        ]
    }

    #[test]
    fn a_cookie_names_its_operator_until_it_expires_and_cannot_be_forged() {
        let t = tokens();
        let bob = Operator("bob.ops".into());
        let value = issue(&t, &bob, 1_000).expect("issued");
        assert!(!value.contains("bob-0123456789abcdef"), "no token in it");
        assert_eq!(verify(&t, &value, 1_000), Some(bob.clone()));
        assert_eq!(verify(&t, &value, 1_000 + LIFETIME_S), None, "expired");
        // Another name, a later expiry or a changed MAC: refused.
        assert_eq!(verify(&t, &value.replace("bob.ops", "alice"), 1_000), None);
        let (exp, rest) = value.split_once('.').expect("parts");
        let later = format!("{}.{rest}", exp.parse::<i64>().expect("n") + 3600);
        assert_eq!(verify(&t, &later, 1_000), None);
        let mut flipped = value.clone().into_bytes();
        let i = exp.len() + 1;
        flipped[i] = if flipped[i] == b'0' { b'1' } else { b'0' };
        assert_eq!(
            verify(&t, &String::from_utf8(flipped).expect("utf8"), 1_000),
            None
        );
        // The token taken out of ADMIN_TOKENS: its sessions end.
        assert_eq!(verify(&t[..1], &value, 1_000), None);
        assert_eq!(verify(&t, "garbage", 1_000), None);
    }
}
