//! Documents rendered once at start-up: they depend only on the catalog, the schemas and the
//! configuration, so the free endpoints serve bytes without re-serialising on every request.

pub mod catalog;
pub mod clients;
pub mod mcp_guide;
pub mod openapi;
pub mod pages;
pub mod skill;

use axum::body::Bytes;
use grove_common::{
    catalog::{COACHES, Coach, CoachId, Mode, ModeId},
    config::{Config, Network},
    sandbox::{self, SandboxError},
    schema::SchemaRegistry,
};
use std::collections::HashMap;

/// A count as a word in running text ("seven coaches"); digits past twenty.
pub fn number_word(n: usize) -> String {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// What a call is paid in, as running text says it: "USDC on Base", or on the testnet "test USDC
/// on Base Sepolia (a testnet: no real money)".
pub fn usdc_on(network: Network) -> String {
    if network.is_testnet() {
        format!(
            "test USDC on {} (a testnet: no real money)",
            network.display_name()
        )
    } else {
        format!("USDC on {}", network.display_name())
    }
}

pub struct Published {
    pub agents_catalog: Bytes,
    pub actions_catalog: Bytes,
    pub openapi: Bytes,
    pub well_known: Bytes,
    pub agents_guide: String,
    pub actions_guide: String,
    pub skill: String,
    coaching_samples: HashMap<(CoachId, ModeId), Bytes>,
}

fn bytes(value: &serde_json::Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

impl Published {
    pub fn render(config: &Config, schemas: &SchemaRegistry) -> Result<Self, SandboxError> {
        let mut coaching_samples = HashMap::new();
        for coach in COACHES.iter() {
            for (mode, _) in coach.offered_modes() {
                let sample = sandbox::coaching_sample(coach, mode)?;
                coaching_samples.insert((coach.id, mode.id), bytes(&sample));
            }
        }
        Ok(Self {
            agents_catalog: bytes(&catalog::agents(config)),
            actions_catalog: bytes(&catalog::actions(config)),
            openapi: bytes(&openapi::document(config, schemas)),
            well_known: bytes(&catalog::well_known(config)),
            agents_guide: pages::agents_guide(config),
            actions_guide: pages::actions_guide(config),
            skill: skill::render(config),
            coaching_samples,
        })
    }

    /// The sandbox envelope for a coach and one of its modes.
    pub fn coaching_sample(&self, coach: &Coach, mode: &Mode) -> Option<Bytes> {
        self.coaching_samples.get(&(coach.id, mode.id)).cloned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_read_as_words_up_to_twenty() {
        assert_eq!(super::number_word(7), "seven");
        assert_eq!(super::number_word(16), "sixteen");
        assert_eq!(super::number_word(21), "21");
    }
}
