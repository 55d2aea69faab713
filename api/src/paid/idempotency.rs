//! What makes two requests "the same" (CONTRACT 4): scopes, windows and the canonical body.

use crate::extract::IdempotencyKey;
use alloy_primitives::Address;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// Where a request's idempotency record lives and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub key: String,
    pub window: Duration,
}

/// How long an explicit key answers for its request, whatever the product.
pub const KEYED_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// Keyed and keyless scopes carry different prefixes, so one never answers the other. A keyed
/// scope lasts `KEYED_WINDOW`; a keyless one lasts the product's `keyless_window`.
pub fn scope(
    keyless_window: Duration,
    payer: Address,
    path: &str,
    canonical_body: &str,
    key: Option<&IdempotencyKey>,
) -> Scope {
    let payer = format!("{payer:#x}");
    match key {
        Some(k) => Scope {
            key: format!("key:{payer}:{}", k.as_str()),
            window: KEYED_WINDOW,
        },
        None => Scope {
            key: format!("body:{}", sha256_hex(&[&payer, path, canonical_body])),
            window: keyless_window,
        },
    }
}

/// Fingerprint of "this request": the path and the canonical body.
pub fn request_hash(path: &str, canonical_body: &str) -> String {
    sha256_hex(&[path, canonical_body])
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The parsed JSON re-serialised with sorted keys and no whitespace.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&map[*k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_ignores_key_order_and_whitespace() {
        let a: Value = serde_json::from_str(r#"{ "b": 1, "a": {"y": [1, 2], "x": "s"} }"#).unwrap();
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&b), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
    }

    #[test]
    fn keyed_and_keyless_scopes_differ_and_depend_on_payer() {
        let payer: Address = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
            .parse()
            .unwrap();
        let other: Address = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
            .parse()
            .unwrap();
        let key = IdempotencyKey::parse(b"k1").unwrap();
        let keyless_window = Duration::from_secs(600);
        let keyed = scope(keyless_window, payer, "/p", "{}", Some(&key));
        let keyless = scope(keyless_window, payer, "/p", "{}", None);
        assert_ne!(keyed.key, keyless.key);
        assert_eq!(keyed.window, Duration::from_secs(86_400));
        assert_eq!(keyless.window, keyless_window);
        assert_ne!(
            keyless.key,
            scope(keyless_window, other, "/p", "{}", None).key
        );
    }
}
