//! The Coinbase Developer Platform API key (`CDP_API_KEY_ID`, `CDP_API_KEY_SECRET`): CDP's
//! facilitator wants a fresh token signed with it on every request, so the key is parsed and
//! checked here, at start-up, and a bad one stops the process instead of failing every payment.
//!
//! CDP issues two kinds of key: base64 of 64 bytes, an Ed25519 seed followed by its public key
//! (signed `EdDSA`), and an EC P-256 private key in PEM (signed `ES256`).

use super::{ConfigError, invalid};
use base64::{Engine, engine::general_purpose::STANDARD};
use std::fmt;

/// CDP's mainnet x402 facilitator: the default `X402_FACILITATOR_URL` when a CDP key is set.
pub const CDP_FACILITATOR_URL: &str = "https://api.cdp.coinbase.com/platform/v2/x402";

#[derive(Clone, Debug)]
pub struct CdpCredentials {
    /// A UUID or `organizations/{org}/apiKeys/{id}`: the token's `kid` and `sub`.
    pub key_id: String,
    pub key: CdpKey,
}

/// A validated private key. Its `Debug` names the kind only.
#[derive(Clone)]
pub enum CdpKey {
    Ed25519(ed25519_dalek::SigningKey),
    EcP256(p256::ecdsa::SigningKey),
}

impl fmt::Debug for CdpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ed25519(_) => f.write_str("CdpKey::Ed25519(***)"),
            Self::EcP256(_) => f.write_str("CdpKey::EcP256(***)"),
        }
    }
}

impl CdpKey {
    /// Parses a key as CDP hands it out. The error never contains the secret.
    pub fn parse(secret: &str) -> Result<Self, String> {
        let secret = secret.trim();
        if secret.contains("-----BEGIN") {
            return parse_pem(secret);
        }
        let bytes = STANDARD.decode(secret).map_err(|_| {
            "expected an EC P-256 private key in PEM (-----BEGIN EC PRIVATE KEY-----) or the \
             base64 of a 64-byte Ed25519 key"
                .to_owned()
        })?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|b: Vec<u8>| {
            format!(
                "an Ed25519 key is 64 bytes (seed then public key) in base64, this one is {}",
                b.len()
            )
        })?;
        let (seed, public) = bytes.split_at(32);
        let mut seed_bytes = [0u8; 32];
        seed_bytes.copy_from_slice(seed);
        let key = ed25519_dalek::SigningKey::from_bytes(&seed_bytes);
        // A truncated or mixed-up paste would sign with a key CDP does not know: refuse it now.
        if key.verifying_key().as_bytes() != public {
            return Err("the Ed25519 key's second half is not the public key of its seed".into());
        }
        Ok(Self::Ed25519(key))
    }

    /// The JWS `alg` this key signs with.
    pub fn alg(&self) -> &'static str {
        match self {
            Self::Ed25519(_) => "EdDSA",
            Self::EcP256(_) => "ES256",
        }
    }
}

fn parse_pem(secret: &str) -> Result<CdpKey, String> {
    use p256::pkcs8::DecodePrivateKey;
    // `.env` files often hold the PEM on one line with literal `\n`s (the official SDKs accept it).
    let pem = secret.replace("\\n", "\n");
    let key = p256::SecretKey::from_sec1_pem(&pem)
        .or_else(|_| p256::SecretKey::from_pkcs8_pem(&pem))
        .map_err(|_| {
            "not an EC P-256 private key in PEM (-----BEGIN EC PRIVATE KEY----- or \
             -----BEGIN PRIVATE KEY-----)"
                .to_owned()
        })?;
    Ok(CdpKey::EcP256(key.into()))
}

/// Both variables or neither; a CDP key replaces `X402_FACILITATOR_AUTH`, it does not add to it.
pub(super) fn read(
    var: &impl Fn(&str) -> Option<String>,
) -> Result<Option<CdpCredentials>, ConfigError> {
    let (key_id, secret) = match (var("CDP_API_KEY_ID"), var("CDP_API_KEY_SECRET")) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(invalid(
                "CDP_API_KEY_SECRET",
                "must be set with CDP_API_KEY_ID",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid(
                "CDP_API_KEY_ID",
                "must be set with CDP_API_KEY_SECRET",
            ));
        }
        (Some(id), Some(secret)) => (id, secret),
    };
    if key_id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "CDP_API_KEY_ID",
            "expected a key id such as a UUID or organizations/{org}/apiKeys/{id}",
        ));
    }
    if var("X402_FACILITATOR_AUTH").is_some() {
        return Err(invalid(
            "X402_FACILITATOR_AUTH",
            "cannot be combined with CDP_API_KEY_ID/CDP_API_KEY_SECRET (CDP tokens are the \
             Authorization header): set one or the other",
        ));
    }
    let key = CdpKey::parse(&secret).map_err(|problem| invalid("CDP_API_KEY_SECRET", problem))?;
    Ok(Some(CdpCredentials { key_id, key }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};

    fn ed25519_secret(seed: u8) -> String {
        let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let mut bytes = key.to_bytes().to_vec();
        bytes.extend_from_slice(key.verifying_key().as_bytes());
        STANDARD.encode(bytes)
    }

    fn p256_key() -> p256::SecretKey {
        p256::SecretKey::from_slice(&[7u8; 32]).expect("a valid scalar")
    }

    #[test]
    fn both_key_kinds_parse_to_their_algorithm() {
        assert_eq!(
            CdpKey::parse(&ed25519_secret(1)).expect("ed25519").alg(),
            "EdDSA"
        );
        let sec1 = p256_key().to_sec1_pem(LineEnding::LF).expect("pem");
        assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----"));
        assert_eq!(CdpKey::parse(&sec1).expect("sec1").alg(), "ES256");
        // One line with literal `\n`s, as a .env file holds it.
        let one_line = sec1.replace('\n', "\\n");
        assert_eq!(CdpKey::parse(&one_line).expect("escaped").alg(), "ES256");
        let pkcs8 = p256_key().to_pkcs8_pem(LineEnding::LF).expect("pkcs8");
        assert_eq!(CdpKey::parse(&pkcs8).expect("pkcs8").alg(), "ES256");
    }

    #[test]
    fn malformed_keys_are_refused_without_echoing_them() {
        let mut mismatched = STANDARD.decode(ed25519_secret(1)).expect("b64");
        mismatched[40] ^= 1;
        let truncated = STANDARD.encode([3u8; 32]);
        let bad_pem = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----";
        for secret in [
            STANDARD.encode(&mismatched),
            truncated,
            "not base64 at all!".to_owned(),
            bad_pem.to_owned(),
        ] {
            let problem = CdpKey::parse(&secret).expect_err("refused");
            assert!(!problem.contains(&secret), "{problem}");
        }
    }

    fn config(pairs: &[(&str, &str)]) -> Result<super::super::Config, ConfigError> {
        let map = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        super::super::Config::from_map(&map)
    }

    #[test]
    fn a_cdp_key_defaults_the_facilitator_to_cdp_mainnet() {
        let secret = ed25519_secret(2);
        let c =
            config(&[("CDP_API_KEY_ID", "key-1"), ("CDP_API_KEY_SECRET", &secret)]).expect("valid");
        assert_eq!(c.facilitator_url.as_deref(), Some(CDP_FACILITATOR_URL));
        assert_eq!(c.cdp.as_ref().map(|k| k.key_id.as_str()), Some("key-1"));
        assert!(!format!("{c:?}").contains(&secret));

        let c = config(&[
            ("CDP_API_KEY_ID", "key-1"),
            ("CDP_API_KEY_SECRET", &secret),
            ("X402_FACILITATOR_URL", "https://facilitator.test/x402/"),
        ])
        .expect("valid");
        assert_eq!(
            c.facilitator_url.as_deref(),
            Some("https://facilitator.test/x402")
        );
        assert!(config(&[]).expect("valid").cdp.is_none());
    }

    #[test]
    fn bad_cdp_settings_name_their_variable() {
        let secret = ed25519_secret(2);
        let cases: [(&[(&str, &str)], &str); 4] = [
            (&[("CDP_API_KEY_ID", "key-1")], "CDP_API_KEY_SECRET"),
            (&[("CDP_API_KEY_SECRET", &secret)], "CDP_API_KEY_ID"),
            (
                &[
                    ("CDP_API_KEY_ID", "key-1"),
                    ("CDP_API_KEY_SECRET", "c2hvcnQ="),
                ],
                "CDP_API_KEY_SECRET",
            ),
            (
                &[
                    ("CDP_API_KEY_ID", "key-1"),
                    ("CDP_API_KEY_SECRET", &secret),
                    ("X402_FACILITATOR_AUTH", "Bearer static"),
                ],
                "X402_FACILITATOR_AUTH",
            ),
        ];
        for (pairs, named) in cases {
            match config(pairs) {
                Err(ConfigError::Invalid { var, problem }) => {
                    assert_eq!(var, named, "{problem}");
                    assert!(!problem.contains(&secret));
                }
                other => panic!("expected {named} to be refused, got {other:?}"),
            }
        }
    }

    #[test]
    fn debug_names_the_kind_only() {
        let secret = ed25519_secret(9);
        let key = CdpKey::parse(&secret).expect("parses");
        let printed = format!("{key:?}");
        assert_eq!(printed, "CdpKey::Ed25519(***)");
    }
}
