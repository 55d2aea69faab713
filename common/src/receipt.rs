//! Receipts (CONTRACT 6): an unguessable id, its URL and expiry.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use rand::RngCore;
use serde_json::{Value, json};

/// How long a receipt can be fetched.
pub const LIFETIME_DAYS: i64 = 30;

/// 128 random bits from the OS-seeded CSPRNG, hex-encoded.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn expires_at(created_at: DateTime<Utc>) -> DateTime<Utc> {
    created_at + Duration::days(LIFETIME_DAYS)
}

pub fn url(id: &str) -> String {
    crate::catalog::paths::receipt(id)
}

/// The `receipt` object carried in every paid response.
pub fn json(id: &str, created_at: DateTime<Utc>) -> Value {
    json!({
        "id": id,
        "url": url(id),
        "expires_at": expires_at(created_at).to_rfc3339_opts(SecondsFormat::Secs, true),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_128_bit_and_distinct() {
        let a = super::new_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, super::new_id());
    }
}
