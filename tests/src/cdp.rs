//! CDP API keys of both kinds made from fixed seeds (secrets in the form CDP hands out), and a
//! verifier for CDP bearer tokens: what Coinbase's facilitator does with the public key.

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
// One `signature::Verifier` trait serves both key kinds.
use ed25519_dalek::Verifier as _;
use serde_json::Value;

/// A private key as an operator would paste it into `CDP_API_KEY_SECRET`.
#[derive(Clone)]
pub enum TestCdpKey {
    Ed25519(ed25519_dalek::SigningKey),
    EcP256(p256::ecdsa::SigningKey),
}

/// The public half, which is all a facilitator has.
#[derive(Clone, Debug)]
pub enum CdpPublicKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    EcP256(p256::ecdsa::VerifyingKey),
}

impl TestCdpKey {
    pub fn ed25519(seed: u8) -> Self {
        Self::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[seed; 32]))
    }

    pub fn p256(seed: u8) -> Self {
        // Any 32 equal non-zero bytes below the curve order are a valid scalar.
        let key = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("a valid P-256 scalar");
        Self::EcP256(key)
    }

    /// Base64 of seed ‖ public key, or a SEC1 PEM (`-----BEGIN EC PRIVATE KEY-----`).
    pub fn secret(&self) -> String {
        match self {
            Self::Ed25519(key) => {
                let mut bytes = key.to_bytes().to_vec();
                bytes.extend_from_slice(key.verifying_key().as_bytes());
                STANDARD.encode(bytes)
            }
            Self::EcP256(key) => sec1_pem(key),
        }
    }

    pub fn public(&self) -> CdpPublicKey {
        match self {
            Self::Ed25519(key) => CdpPublicKey::Ed25519(key.verifying_key()),
            Self::EcP256(key) => CdpPublicKey::EcP256(*key.verifying_key()),
        }
    }

    pub fn alg(&self) -> &'static str {
        match self {
            Self::Ed25519(_) => "EdDSA",
            Self::EcP256(_) => "ES256",
        }
    }
}

/// SEC1 `ECPrivateKey` DER as OpenSSL (and CDP) write it: version 1, the scalar, the named curve
/// (prime256v1) and the public point. `p256`'s own encoder leaves the curve out, which OpenSSL,
/// and so the official SDKs, refuse to read.
fn sec1_pem(key: &p256::ecdsa::SigningKey) -> String {
    let public = key.verifying_key().to_encoded_point(false);
    let mut der = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
    der.extend_from_slice(&key.to_bytes());
    der.extend_from_slice(&[
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, // prime256v1
        0xa1, 0x44, 0x03, 0x42, 0x00,
    ]);
    der.extend_from_slice(public.as_bytes());
    let body = STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
        lines.join("\n")
    )
}

/// A token whose signature checked out.
#[derive(Clone, Debug)]
pub struct VerifiedToken {
    pub header: Value,
    pub claims: Value,
}

/// Checks a compact JWS: three base64url parts, JSON header and claims, `alg` matching the key's
/// kind, and the signature (Ed25519, or ES256 as 64-byte r‖s) over `header.claims`.
pub fn verify(token: &str, key: &CdpPublicKey) -> Result<VerifiedToken, String> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header_b64, claims_b64, signature_b64] = parts[..] else {
        return Err(format!("expected 3 parts, got {}", parts.len()));
    };
    let decode = |part: &str, what: &str| -> Result<Value, String> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|e| format!("{what}: {e}"))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{what}: {e}"))
    };
    let header = decode(header_b64, "header")?;
    let claims = decode(claims_b64, "claims")?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|e| format!("signature: {e}"))?;
    let input = format!("{header_b64}.{claims_b64}");
    let alg = header["alg"].as_str().unwrap_or_default();
    match key {
        CdpPublicKey::Ed25519(key) => {
            if alg != "EdDSA" {
                return Err(format!("alg {alg:?} for an Ed25519 key"));
            }
            let signature = ed25519_dalek::Signature::from_slice(&signature)
                .map_err(|e| format!("signature: {e}"))?;
            key.verify(input.as_bytes(), &signature)
                .map_err(|_| "bad EdDSA signature".to_owned())?;
        }
        CdpPublicKey::EcP256(key) => {
            if alg != "ES256" {
                return Err(format!("alg {alg:?} for a P-256 key"));
            }
            let signature = p256::ecdsa::Signature::from_slice(&signature)
                .map_err(|e| format!("signature (64 bytes r||s): {e}"))?;
            key.verify(input.as_bytes(), &signature)
                .map_err(|_| "bad ES256 signature".to_owned())?;
        }
    }
    Ok(VerifiedToken { header, claims })
}

/// What CDP requires of a token for `uri` at `now` (unix seconds), beyond its signature:
/// header `{alg, kid, typ: "JWT", nonce: 32 hex}`, claims `sub = kid`, `iss = "cdp"`,
/// `aud = ["cdp_service"]`, `uris = [uri]`, `nbf = iat` within a minute of now, `exp = iat + 120`.
pub fn check_claims(
    token: &VerifiedToken,
    key_id: &str,
    uri: &str,
    now: u64,
) -> Result<(), String> {
    let (h, c) = (&token.header, &token.claims);
    let expect = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("{what}: header {h}, claims {c}"))
        }
    };
    let mut header_keys: Vec<&str> = h
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    header_keys.sort_unstable();
    expect(header_keys == ["alg", "kid", "nonce", "typ"], "header keys")?;
    expect(h["kid"] == key_id, "kid")?;
    expect(h["typ"] == "JWT", "typ")?;
    let nonce = h["nonce"].as_str().unwrap_or_default();
    expect(
        nonce.len() == 32 && nonce.chars().all(|ch| ch.is_ascii_hexdigit()),
        "nonce",
    )?;
    expect(c["sub"] == key_id, "sub")?;
    expect(c["iss"] == "cdp", "iss")?;
    expect(c["aud"] == serde_json::json!(["cdp_service"]), "aud")?;
    expect(c["uris"] == serde_json::json!([uri]), "uris")?;
    let (iat, nbf, exp) = (c["iat"].as_u64(), c["nbf"].as_u64(), c["exp"].as_u64());
    let (Some(iat), Some(nbf), Some(exp)) = (iat, nbf, exp) else {
        return expect(false, "iat, nbf and exp as integers");
    };
    expect(nbf == iat, "nbf == iat")?;
    expect(exp.checked_sub(iat) == Some(120), "exp - iat == 120")?;
    expect(iat.abs_diff(now) <= 60, "iat is now")
}
