//! Every version of one settlement transaction: the first one sent, and each replacement at the
//! same nonce with higher fees. Any of them may be the one mined, so all are followed until one
//! lands; they are stored together where the payment keeps its sent transaction
//! (`SentTransaction::raw`, comma-separated, oldest first; `hash` is the latest's).

use crate::x402::settle::SentTransaction;
use alloy_primitives::{Bytes, TxHash, keccak256};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Version {
    pub hash: TxHash,
    /// The signed transaction, EIP-2718 encoded.
    pub raw: Bytes,
}

impl Version {
    /// A transaction's hash is the keccak of its EIP-2718 encoding.
    pub fn of(raw: Bytes) -> Self {
        Self {
            hash: keccak256(&raw),
            raw,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Versions(Vec<Version>);

impl Versions {
    pub fn first(raw: Bytes) -> Self {
        Self(vec![Version::of(raw)])
    }

    /// The versions stored for an unknown outcome; `None` for a transaction we did not sign (a
    /// hash a facilitator named) or bytes that do not read.
    pub fn from_sent(sent: &SentTransaction) -> Option<Self> {
        let versions: Option<Vec<Version>> = sent
            .raw
            .as_deref()?
            .split(',')
            .map(|hex| {
                alloy_primitives::hex::decode(hex.trim())
                    .ok()
                    .map(|b| Version::of(b.into()))
            })
            .collect();
        versions.filter(|v| !v.is_empty()).map(Self)
    }

    pub fn push(&mut self, raw: Bytes) {
        self.0.push(Version::of(raw));
    }

    pub fn latest(&self) -> &Version {
        // Never empty: built from one version and only grown.
        &self.0[self.0.len() - 1]
    }

    /// Newest first: the likeliest to be mined.
    pub fn newest_first(&self) -> impl Iterator<Item = &Version> {
        self.0.iter().rev()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn to_sent(&self) -> SentTransaction {
        let raw: Vec<String> = self
            .0
            .iter()
            .map(|v| alloy_primitives::hex::encode_prefixed(&v.raw))
            .collect();
        SentTransaction {
            hash: self.latest().hash.to_string(),
            raw: Some(raw.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_survive_the_stored_form_and_the_latest_names_the_hash() {
        let mut versions = Versions::first(Bytes::from_static(&[2, 1]));
        versions.push(Bytes::from_static(&[2, 2]));
        let sent = versions.to_sent();
        assert_eq!(sent.hash, keccak256([2u8, 2]).to_string());
        assert_eq!(sent.raw.as_deref(), Some("0x0201,0x0202"));
        assert_eq!(Versions::from_sent(&sent), Some(versions));
        // One version, as stored before replacements existed.
        let one = SentTransaction {
            hash: keccak256([2u8, 1]).to_string(),
            raw: Some("0x0201".into()),
        };
        assert_eq!(Versions::from_sent(&one).map(|v| v.len()), Some(1));
        let foreign = SentTransaction {
            hash: one.hash.clone(),
            raw: None,
        };
        assert_eq!(Versions::from_sent(&foreign), None);
        let garbled = SentTransaction {
            hash: one.hash,
            raw: Some("0x0201,zz".into()),
        };
        assert_eq!(Versions::from_sent(&garbled), None);
    }
}
