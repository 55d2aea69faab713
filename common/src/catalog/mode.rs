//! What a mode is in the catalog: its tier (hence price and envelope caps), summaries and
//! recommended context. Each mode states its own entry (`crate::modes::<id>::MODE`).

use super::ids::ModeId;
use super::paths;
use crate::money::UsdcAmount;
use serde::Serialize;

/// The longest `thinking.lever`, in every envelope (and so the longest first ranked lever of
/// diagnose_growth, which must equal it).
pub const LEVER_MAX: usize = 120;

/// Price tier of a mode. The tier fixes the price and the envelope caps (CONTRACT 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Short,
    Deep,
    Flagship,
}

/// Upper bounds on a coaching envelope, by tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvelopeCaps {
    pub reply_max_chars: usize,
    pub reply_word_target: usize,
    pub numbers_max: usize,
    pub actions_min: usize,
    pub actions_max: usize,
    pub caveats_max: usize,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Short, Tier::Deep, Tier::Flagship];

    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::Short => "short",
            Tier::Deep => "deep",
            Tier::Flagship => "flagship",
        }
    }

    pub const fn price(self) -> UsdcAmount {
        match self {
            Tier::Short => UsdcAmount::from_atomic(180_000),
            Tier::Deep => UsdcAmount::from_atomic(250_000),
            Tier::Flagship => UsdcAmount::from_atomic(450_000),
        }
    }

    pub const fn caps(self) -> EnvelopeCaps {
        match self {
            Tier::Short => EnvelopeCaps {
                reply_max_chars: 1400,
                reply_word_target: 150,
                numbers_max: 3,
                actions_min: 1,
                actions_max: 3,
                caveats_max: 2,
            },
            Tier::Deep => EnvelopeCaps {
                reply_max_chars: 2400,
                reply_word_target: 250,
                numbers_max: 5,
                actions_min: 1,
                actions_max: 4,
                caveats_max: 3,
            },
            Tier::Flagship => EnvelopeCaps {
                reply_max_chars: 3000,
                reply_word_target: 300,
                numbers_max: 6,
                actions_min: 1,
                actions_max: 5,
                caveats_max: 3,
            },
        }
    }
}

/// One of the sixteen coaching modes.
#[derive(Debug)]
pub struct Mode {
    pub id: ModeId,
    pub tier: Tier,
    /// The catalog's neutral summary; each coach also writes its own.
    pub summary: &'static str,
    /// What the mode does, as a phrase inside a sentence (the published schemas' descriptions).
    pub purpose: &'static str,
    /// Dotted context paths that improve the answer (never required).
    pub recommended_context: &'static [&'static str],
}

impl Mode {
    pub const fn price(&self) -> UsdcAmount {
        self.tier.price()
    }

    pub fn request_schema_path(&self) -> String {
        paths::fill(paths::MODE_REQUEST_SCHEMA, self.id.as_str())
    }

    pub fn response_schema_path(&self) -> String {
        paths::fill(paths::MODE_RESPONSE_SCHEMA, self.id.as_str())
    }
}
