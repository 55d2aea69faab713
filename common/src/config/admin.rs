//! The admin listener (`ADMIN_ADDR`) and the operators' tokens (`ADMIN_TOKENS`).
//!
//! The admin listener serves `/metrics`, `/metrics/queues`, the admin API and the console, apart
//! from the public port. It binds loopback by default (`127.0.0.1:9090`: not 8080, the api's
//! default; not 9100, the worker's health port); `off` turns it off. Each token has a name, which
//! the audit table records as who acted: `ADMIN_TOKENS=alice:<secret>,bob:<secret>`.
//!
//! Whether a listener may start without a token is decided where it starts
//! ([`AdminConfig::refusal`]): the `worker` reads this configuration too and has no admin
//! listener, so a missing token must not stop it.

use super::{AppEnv, ConfigError, Secret, invalid};
use std::{collections::HashSet, net::SocketAddr};

/// `ADMIN_ADDR`'s default: loopback only, so that nothing is reachable from outside by default.
pub const DEFAULT_ADMIN_ADDR: &str = "127.0.0.1:9090";

/// The shortest secret accepted: 16 characters (96 bits or more from any generator that prints
/// base64 or hex) keeps guessing out of reach even without a rate limit.
pub const MIN_SECRET_LEN: usize = 16;

/// One operator's token: the name the audit records, and the bearer secret.
#[derive(Clone, Debug)]
pub struct AdminToken {
    pub name: String,
    pub secret: Secret,
}

#[derive(Clone, Debug)]
pub struct AdminConfig {
    /// `None`: `ADMIN_ADDR=off`, no admin listener.
    pub addr: Option<SocketAddr>,
    pub tokens: Vec<AdminToken>,
}

impl AdminConfig {
    /// Why the admin listener must not start as configured: bound beyond loopback, or in
    /// production, without a single token. The admin API would refuse everyone anyway; an
    /// operator who exposes the port or runs production without a token has made a mistake
    /// that should stop the process rather than leave the console locked.
    pub fn refusal(&self, app_env: AppEnv) -> Option<String> {
        let addr = self.addr?;
        if !self.tokens.is_empty() {
            return None;
        }
        if !addr.ip().is_loopback() {
            return Some(format!(
                "ADMIN_TOKENS: required when ADMIN_ADDR ({addr}) is not a loopback address"
            ));
        }
        if app_env == AppEnv::Production {
            return Some("ADMIN_TOKENS: required with APP_ENV=production".into());
        }
        None
    }
}

pub(super) fn read(var: &impl Fn(&str) -> Option<String>) -> Result<AdminConfig, ConfigError> {
    let addr = match var("ADMIN_ADDR").as_deref() {
        Some("off") => None,
        raw => {
            let raw = raw.unwrap_or(DEFAULT_ADMIN_ADDR);
            Some(raw.parse().map_err(|_| {
                invalid(
                    "ADMIN_ADDR",
                    format!("expected host:port (e.g. {DEFAULT_ADMIN_ADDR}) or off, got {raw:?}"),
                )
            })?)
        }
    };
    let tokens = match var("ADMIN_TOKENS") {
        None => Vec::new(),
        Some(list) => tokens(&list)?,
    };
    Ok(AdminConfig { addr, tokens })
}

/// `name:secret` pairs separated by commas. A problem names the entry by its position or
/// its name, never by its secret.
fn tokens(list: &str) -> Result<Vec<AdminToken>, ConfigError> {
    let var = "ADMIN_TOKENS";
    let mut out = Vec::new();
    let mut names = HashSet::new();
    for (i, entry) in list.split(',').map(str::trim).enumerate() {
        let n = i + 1;
        let Some((name, secret)) = entry.split_once(':') else {
            return Err(invalid(
                var,
                format!("entry {n} is not name:secret (e.g. alice:<secret>)"),
            ));
        };
        let name = name.trim();
        let secret = secret.trim();
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
        if !name_ok {
            return Err(invalid(
                var,
                format!(
                    "entry {n}: the name must be 1-64 letters, digits, '.', '_', '-' or '@' (it is what the audit records)"
                ),
            ));
        }
        if secret.chars().count() < MIN_SECRET_LEN || secret.chars().any(char::is_whitespace) {
            return Err(invalid(
                var,
                format!(
                    "{name}'s secret must be at least {MIN_SECRET_LEN} characters, without spaces"
                ),
            ));
        }
        if !names.insert(name.to_owned()) {
            return Err(invalid(var, format!("{name} is listed twice")));
        }
        out.push(AdminToken {
            name: name.to_owned(),
            secret: Secret::new(secret),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_pairs(pairs: &[(&str, &str)]) -> Result<AdminConfig, ConfigError> {
        read(&|k: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_admin_listener_defaults_to_loopback_and_can_be_turned_off() {
        let c = read_pairs(&[]).expect("defaults");
        assert_eq!(c.addr, Some(DEFAULT_ADMIN_ADDR.parse().expect("addr")));
        assert!(c.tokens.is_empty());
        assert_eq!(c.refusal(AppEnv::Development), None);
        assert!(
            c.refusal(AppEnv::Production)
                .is_some_and(|r| r.contains("APP_ENV=production"))
        );
        let off = read_pairs(&[("ADMIN_ADDR", "off")]).expect("off");
        assert_eq!(off.addr, None);
        assert_eq!(off.refusal(AppEnv::Production), None);
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let open = read_pairs(&[("ADMIN_ADDR", "0.0.0.0:9090")]).expect("parses");
        let refusal = open.refusal(AppEnv::Development).expect("refused");
        assert!(refusal.contains("ADMIN_TOKENS") && refusal.contains("0.0.0.0:9090"));
        let guarded = read_pairs(&[
            ("ADMIN_ADDR", "0.0.0.0:9090"),
            ("ADMIN_TOKENS", "alice:0123456789abcdef"),
        ])
        .expect("parses");
        assert_eq!(guarded.refusal(AppEnv::Production), None);
    }

    #[test]
    fn tokens_are_named_and_bad_ones_are_named_without_their_secret() {
        let c = read_pairs(&[(
            "ADMIN_TOKENS",
            "alice:0123456789abcdef, bob:fedcba9876543210:x",
        )])
        .expect("parses");
        let names: Vec<&str> = c.tokens.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["alice", "bob"]);
        assert_eq!(c.tokens[1].secret.expose(), "fedcba9876543210:x");
        for (bad, says) in [
            ("alice", "entry 1 is not name:secret"),
            ("alice:short-secret", "alice's secret must be at least 16"),
            (":0123456789abcdef", "entry 1: the name"),
            (
                "alice:0123456789abcdef,alice:0123456789abcdeg",
                "alice is listed twice",
            ),
        ] {
            let e = read_pairs(&[("ADMIN_TOKENS", bad)])
                .expect_err(bad)
                .to_string();
            assert!(e.starts_with("ADMIN_TOKENS: ") && e.contains(says), "{e}");
            assert!(!e.contains("0123456789abcde"), "a secret in {e}");
        }
        let e = read_pairs(&[("ADMIN_ADDR", "nowhere")])
            .expect_err("bad addr")
            .to_string();
        assert!(e.starts_with("ADMIN_ADDR: "), "{e}");
    }
}
