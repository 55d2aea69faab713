//! The catalog: seven coaches, sixteen modes, three tiers and one action, defined once.
//!
//! Everything a client sees about what Grove sells (catalog JSON, OpenAPI, the prices in a 402,
//! the schema routes, the HTML guides) is derived from the statics in this module.

mod action;
mod coaches;
mod ids;
mod modes;
pub mod paths;

pub use action::{Action, REVIEW_REQUEST};
pub use coaches::COACHES;
pub use ids::{ByCoach, ByMode, CoachId, ModeId, UnknownId};
pub use modes::MODES;

use crate::money::UsdcAmount;
use serde::Serialize;

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

/// A coach's own description of one mode it offers.
#[derive(Debug)]
pub struct CoachMode {
    pub mode: ModeId,
    pub summary: &'static str,
}

/// One of the seven coaches (the spec calls them agents).
#[derive(Debug)]
pub struct Coach {
    pub id: CoachId,
    pub name: &'static str,
    pub domain: &'static str,
    pub tagline: &'static str,
    pub modes: &'static [CoachMode],
}

impl Coach {
    pub fn offers(&self, mode: ModeId) -> bool {
        self.modes.iter().any(|m| m.mode == mode)
    }

    pub fn call_path(&self) -> String {
        paths::agent_call(self.id)
    }

    /// The coach's modes joined with the catalog's mode records.
    pub fn offered_modes(&self) -> impl Iterator<Item = (&'static Mode, &'static CoachMode)> + '_ {
        self.modes.iter().map(|cm| (mode(cm.mode), cm))
    }
}

pub fn mode(id: ModeId) -> &'static Mode {
    &MODES[id]
}

pub fn coach(id: CoachId) -> &'static Coach {
    &COACHES[id]
}

pub fn coaches_offering(mode: ModeId) -> impl Iterator<Item = &'static Coach> {
    COACHES.iter().filter(move |c| c.offers(mode))
}

/// Cheapest and dearest coaching price, for the "dynamic price" declarations.
pub fn coaching_price_range() -> (UsdcAmount, UsdcAmount) {
    let prices = MODES.iter().map(Mode::price);
    let min = prices.clone().min().unwrap_or(Tier::Short.price());
    let max = prices.max().unwrap_or(Tier::Flagship.price());
    (min, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tables_are_keyed_by_their_ids() {
        for id in ModeId::ALL {
            assert_eq!(mode(id).id, id);
        }
        for id in CoachId::ALL {
            assert_eq!(coach(id).id, id);
        }
    }

    #[test]
    fn every_coach_lists_each_mode_once() {
        for coach in COACHES.iter() {
            let mut seen = HashSet::new();
            for cm in coach.modes {
                assert!(seen.insert(cm.mode), "{} lists {} twice", coach.id, cm.mode);
                assert!(!cm.summary.is_empty());
            }
        }
    }

    #[test]
    fn every_mode_is_offered_by_some_coach() {
        for m in MODES.iter() {
            assert!(coaches_offering(m.id).next().is_some(), "{} unsold", m.id);
        }
        assert_eq!(MODES.len(), 16);
        assert_eq!(COACHES.len(), 7);
    }

    #[test]
    fn price_range_spans_short_to_flagship() {
        let (min, max) = coaching_price_range();
        assert_eq!(min.to_string(), "$0.18");
        assert_eq!(max.to_string(), "$0.45");
    }
}
