//! Request rate limits (`RATE_LIMIT_*`) and where a client's address comes from
//! (`CLIENT_IP_HEADER`, `CLIENT_IP_HOPS`). A limit of 0 turns that limit off. Loopback is never
//! limited: it is the operator's own tools, or a proxy on the same host, which must then say
//! who the client is through `CLIENT_IP_HEADER` (until it does, its clients are not limited,
//! rather than all of them sharing one address's budget).
//!
//! Defaults, and why:
//! - 600 requests a minute from one address (bursts of 120) on the free and unpaid paths: an
//!   agent reading the catalog, a schema and the guide, then asking for a price, makes a few dozen;
//!   a page of a browser fetches a handful. Ten a second sustained is far beyond any honest client
//!   and far below what one address could otherwise take from the process.
//! - New paid calls per payer: off. Every one is paid for, so a payer's volume is bounded by what
//!   it spends, and capacity is kept by refusing work that cannot finish in time before anyone
//!   pays, not by turning away paying customers. Set it (bursts are half a minute's worth) to
//!   share capacity between payers when a few agents dominate.
//! - 30 refused payment headers a minute from one address: a payment header skips the address
//!   limit (a paid repeat and a payment retry must never be refused), so forged ones are counted
//!   on their own.

use super::{ConfigError, invalid, parse_or};
use std::num::NonZeroU32;

/// A rate: `per_minute` sustained, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub per_minute: NonZeroU32,
    pub burst: NonZeroU32,
}

/// Where the client's address is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientIp {
    /// The connection's peer address (no proxy in front, or one that is not trusted).
    Peer,
    /// A header a trusted proxy sets (`X-Forwarded-For`, `X-Real-IP`, `CF-Connecting-IP`): the
    /// address `hops` entries from the right of its comma-separated list, so a value the client
    /// itself wrote at the left is never believed.
    Header { name: String, hops: usize },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimits {
    /// Free and unpaid requests per client address (`RATE_LIMIT_PER_IP_PER_MIN`).
    pub per_ip: Option<Rate>,
    /// New paid calls per payer (`RATE_LIMIT_PER_PAYER_PER_MIN`).
    pub per_payer: Option<Rate>,
    /// Refused payment headers per client address (`RATE_LIMIT_BAD_PAYMENTS_PER_MIN`).
    pub bad_payments: Option<Rate>,
    pub client_ip: ClientIp,
}

fn rate(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default_per_minute: u32,
    burst_divisor: u32,
) -> Result<Option<Rate>, ConfigError> {
    let per_minute: u32 = parse_or(name, var(name), &default_per_minute.to_string())?;
    let Some(per_minute) = NonZeroU32::new(per_minute) else {
        return Ok(None);
    };
    let burst = NonZeroU32::new(per_minute.get() / burst_divisor).unwrap_or(NonZeroU32::MIN);
    Ok(Some(Rate { per_minute, burst }))
}

pub(super) fn read(var: &impl Fn(&str) -> Option<String>) -> Result<RateLimits, ConfigError> {
    let client_ip = match var("CLIENT_IP_HEADER") {
        None => ClientIp::Peer,
        Some(name) => {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(invalid("CLIENT_IP_HEADER", "not a valid header name"));
            }
            let hops: usize = parse_or("CLIENT_IP_HOPS", var("CLIENT_IP_HOPS"), "1")?;
            if !(1..=8).contains(&hops) {
                return Err(invalid("CLIENT_IP_HOPS", "must be between 1 and 8"));
            }
            ClientIp::Header {
                name: name.to_ascii_lowercase(),
                hops,
            }
        }
    };
    Ok(RateLimits {
        per_ip: rate(var, "RATE_LIMIT_PER_IP_PER_MIN", 600, 5)?,
        per_payer: rate(var, "RATE_LIMIT_PER_PAYER_PER_MIN", 0, 2)?,
        bad_payments: rate(var, "RATE_LIMIT_BAD_PAYMENTS_PER_MIN", 30, 2)?,
        client_ip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read_map(pairs: &[(&str, &str)]) -> Result<RateLimits, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        read(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn defaults_zero_turns_a_limit_off_and_the_header_is_opt_in() {
        let d = read_map(&[]).expect("defaults");
        assert_eq!(
            d.per_ip.map(|r| (r.per_minute.get(), r.burst.get())),
            Some((600, 120))
        );
        assert_eq!(d.per_payer, None);
        let payer = read_map(&[("RATE_LIMIT_PER_PAYER_PER_MIN", "120")]).expect("parses");
        assert_eq!(
            payer.per_payer.map(|r| (r.per_minute.get(), r.burst.get())),
            Some((120, 60))
        );
        assert_eq!(d.client_ip, ClientIp::Peer);
        let off = read_map(&[("RATE_LIMIT_PER_IP_PER_MIN", "0")]).expect("parses");
        assert_eq!(off.per_ip, None);
        let proxied = read_map(&[("CLIENT_IP_HEADER", "X-Forwarded-For")]).expect("parses");
        assert_eq!(
            proxied.client_ip,
            ClientIp::Header {
                name: "x-forwarded-for".into(),
                hops: 1
            }
        );
        for bad in [
            ("CLIENT_IP_HEADER", "bad header"),
            ("RATE_LIMIT_PER_IP_PER_MIN", "lots"),
        ] {
            let e = read_map(&[bad]).unwrap_err();
            assert!(e.to_string().starts_with(bad.0), "{e}");
        }
    }
}
