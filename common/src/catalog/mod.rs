//! The catalog: seven coaches, sixteen modes, three tiers and one action, defined once.
//!
//! Everything a client sees about what Grove sells (catalog JSON, OpenAPI, the prices in a 402,
//! the schema routes, the HTML guides) is derived from the statics in this module.

mod action;
mod coaches;
// `ids` and `mode` are what each mode's module (`crate::modes`) builds on, and `modes` gathers
// those modules' entries: the modules read the leaves, never this root.
pub(crate) mod ids;
pub(crate) mod mode;
mod modes;
pub mod paths;

pub use action::{Action, REVIEW_REQUEST};
pub use coaches::COACHES;
pub use ids::{ByCoach, ByMode, CoachId, ModeId, UnknownId};
pub use mode::{EnvelopeCaps, LEVER_MAX, Mode, Tier};
pub use modes::MODES;

use crate::money::UsdcAmount;

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
