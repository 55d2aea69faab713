//! Bearer tokens for Coinbase's (CDP) facilitator: a JWT signed with the operator's CDP API key,
//! fresh for every request and bound to its method, host and path (`../shared/notes/x402.md`
//! §7.1, the shape of the official SDKs' `generateJwt`).
//!
//! The JWS is assembled here (base64url header and claims, then an EdDSA or ES256 signature)
//! rather than through a JWT crate: the shape is fixed, the header carries a `nonce` most JWT
//! crates cannot express, and the RustCrypto keys are already what configuration validated.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use grove_common::{
    clock::{Clock, SystemClock},
    config::{CdpCredentials, CdpKey},
};
use reqwest::{
    Url,
    header::{HeaderValue, InvalidHeaderValue},
};
use serde_json::json;
use std::fmt;

/// How long one token is valid: CDP's own clients use 120 s.
pub const TOKEN_LIFETIME_S: u64 = 120;

/// Signs tokens with a CDP API key. `Debug` shows the key id and kind, never the key.
#[derive(Clone)]
pub struct CdpSigner {
    key_id: String,
    key: CdpKey,
}

impl fmt::Debug for CdpSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CdpSigner")
            .field("key_id", &self.key_id)
            .field("key", &self.key)
            .finish()
    }
}

impl CdpSigner {
    pub fn new(credentials: CdpCredentials) -> Self {
        Self {
            key_id: credentials.key_id,
            key: credentials.key,
        }
    }

    /// The `Authorization` value for one request: `Bearer <a new token>`, marked sensitive so
    /// that no HTTP-level logging prints it. (A JWS is base64url and dots, so this does not
    /// fail in practice.)
    pub fn authorization(&self, uri: &str) -> Result<HeaderValue, InvalidHeaderValue> {
        let token = self.token(uri, unix_now(), rand::random());
        let mut value = HeaderValue::try_from(format!("Bearer {token}"))?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// A token for `uri` (`"POST host/path"`), issued at `now` with header nonce `nonce`.
    pub fn token(&self, uri: &str, now: u64, nonce: [u8; 16]) -> String {
        let header = json!({
            "alg": self.key.alg(),
            "kid": self.key_id,
            "typ": "JWT",
            "nonce": hex::encode(nonce),
        });
        let claims = json!({
            "sub": self.key_id,
            "iss": "cdp",
            "aud": ["cdp_service"],
            "uris": [uri],
            "iat": now,
            "nbf": now,
            "exp": now + TOKEN_LIFETIME_S,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.sign(signing_input.as_bytes());
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// JWS signatures: Ed25519 over the input (RFC 8037), or P-256 ECDSA over its SHA-256 as
    /// the 64 bytes r‖s (RFC 7518 §3.4, not DER).
    fn sign(&self, input: &[u8]) -> Vec<u8> {
        match &self.key {
            CdpKey::Ed25519(key) => {
                use ed25519_dalek::Signer;
                key.sign(input).to_bytes().to_vec()
            }
            CdpKey::EcP256(key) => {
                use p256::ecdsa::{Signature, signature::Signer};
                let signature: Signature = key.sign(input);
                signature.to_bytes().to_vec()
            }
        }
    }
}

/// The `uris` entry for a request: method, a space, then host (with a non-default port) and
/// path, without scheme or query: `POST api.cdp.coinbase.com/platform/v2/x402/settle`.
pub fn request_uri(method: &str, url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{method} {host}:{port}{}", url.path()),
        None => format!("{method} {host}{}", url.path()),
    })
}

/// Token lifetimes are checked by CDP against the real time.
fn unix_now() -> u64 {
    SystemClock.wall_unix()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::Value;

    const KEY_ID: &str = "organizations/org-1/apiKeys/key-1";
    const URI: &str = "POST api.cdp.coinbase.com/platform/v2/x402/settle";

    fn ed25519_key() -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&[11u8; 32])
    }

    fn p256_key() -> p256::ecdsa::SigningKey {
        p256::ecdsa::SigningKey::from_slice(&[13u8; 32]).expect("a valid scalar")
    }

    /// A signer from the secret as CDP hands it out, through configuration's parser.
    fn signer(secret: &str) -> CdpSigner {
        CdpSigner::new(CdpCredentials {
            key_id: KEY_ID.into(),
            key: CdpKey::parse(secret).expect("a valid key"),
        })
    }

    fn ed25519_signer() -> CdpSigner {
        let key = ed25519_key();
        let mut bytes = key.to_bytes().to_vec();
        bytes.extend_from_slice(key.verifying_key().as_bytes());
        signer(&STANDARD.encode(bytes))
    }

    fn p256_signer() -> CdpSigner {
        use p256::pkcs8::LineEnding;
        let pem = p256::SecretKey::from(p256_key())
            .to_sec1_pem(LineEnding::LF)
            .expect("pem");
        signer(&pem)
    }

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("json")
    }

    /// Splits a JWS into (header, claims, signing input, signature bytes).
    fn split(token: &str) -> (Value, Value, String, Vec<u8>) {
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        (
            decode_part(parts[0]),
            decode_part(parts[1]),
            format!("{}.{}", parts[0], parts[1]),
            URL_SAFE_NO_PAD.decode(parts[2]).expect("signature"),
        )
    }

    fn assert_cdp_shape(header: &Value, claims: &Value, alg: &str) {
        assert_eq!(
            header,
            &json!({"alg": alg, "kid": KEY_ID, "typ": "JWT", "nonce": "0a".repeat(16)})
        );
        assert_eq!(
            claims,
            &json!({
                "sub": KEY_ID, "iss": "cdp", "aud": ["cdp_service"], "uris": [URI],
                "iat": 1_800_000_000u64, "nbf": 1_800_000_000u64, "exp": 1_800_000_120u64,
            })
        );
    }

    #[test]
    fn an_ed25519_key_signs_an_eddsa_token_its_public_key_verifies() {
        use ed25519_dalek::Verifier;
        let token = ed25519_signer().token(URI, 1_800_000_000, [0x0a; 16]);
        let (header, claims, input, signature) = split(&token);
        assert_cdp_shape(&header, &claims, "EdDSA");
        let signature = ed25519_dalek::Signature::from_slice(&signature).expect("64 bytes");
        ed25519_key()
            .verifying_key()
            .verify(input.as_bytes(), &signature)
            .expect("the public key verifies the token");
        assert!(
            ed25519_dalek::SigningKey::from_bytes(&[12u8; 32])
                .verifying_key()
                .verify(input.as_bytes(), &signature)
                .is_err(),
            "another key does not"
        );
    }

    #[test]
    fn a_p256_key_signs_an_es256_token_its_public_key_verifies() {
        use p256::ecdsa::{Signature, signature::Verifier};
        let token = p256_signer().token(URI, 1_800_000_000, [0x0a; 16]);
        let (header, claims, input, signature) = split(&token);
        assert_cdp_shape(&header, &claims, "ES256");
        // JWS ES256 is r‖s, 64 bytes, not DER.
        let signature = Signature::from_slice(&signature).expect("64 bytes r||s");
        p256_key()
            .verifying_key()
            .verify(input.as_bytes(), &signature)
            .expect("the public key verifies the token");
        let other = p256::ecdsa::SigningKey::from_slice(&[14u8; 32]).expect("scalar");
        assert!(
            other
                .verifying_key()
                .verify(input.as_bytes(), &signature)
                .is_err()
        );
    }

    #[test]
    fn every_authorization_is_a_new_bearer_token_for_now() {
        let signer = ed25519_signer();
        let first = signer.authorization(URI).expect("a header value");
        let second = signer.authorization(URI).expect("a header value");
        assert!(first.is_sensitive());
        assert_ne!(first, second, "a new nonce each time");
        let token = first
            .to_str()
            .expect("ascii")
            .strip_prefix("Bearer ")
            .expect("a bearer token");
        let (header, claims, _, _) = split(token);
        let nonce = header["nonce"].as_str().expect("nonce");
        assert_eq!(nonce.len(), 32);
        assert!(nonce.chars().all(|c| c.is_ascii_hexdigit()));
        let iat = claims["iat"].as_u64().expect("iat");
        assert!(iat.abs_diff(unix_now()) <= 5);
        assert_eq!(claims["nbf"].as_u64(), Some(iat));
        assert_eq!(claims["exp"].as_u64(), Some(iat + 120));
    }

    #[test]
    fn the_uri_is_method_host_and_path_without_scheme_or_default_port() {
        let cdp = Url::parse("https://api.cdp.coinbase.com/platform/v2/x402/settle").expect("url");
        assert_eq!(request_uri("POST", &cdp).as_deref(), Some(URI));
        let explicit = Url::parse("https://api.cdp.coinbase.com:443/p/settle?x=1").expect("url");
        assert_eq!(
            request_uri("POST", &explicit).as_deref(),
            Some("POST api.cdp.coinbase.com/p/settle")
        );
        let local = Url::parse("http://127.0.0.1:4021/settle").expect("url");
        assert_eq!(
            request_uri("POST", &local).as_deref(),
            Some("POST 127.0.0.1:4021/settle")
        );
    }

    #[test]
    fn debug_shows_the_key_id_and_kind_only() {
        let printed = format!("{:?}", p256_signer());
        assert_eq!(
            printed,
            format!("CdpSigner {{ key_id: {KEY_ID:?}, key: CdpKey::EcP256(***) }}")
        );
    }
}
