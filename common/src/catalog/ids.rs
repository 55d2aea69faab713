//! The typed ids of the sixteen modes and the seven coaches, each list written once.
//!
//! [`modes!`](crate::modes) and [`coaches!`](crate::coaches) hold the lists. Everything per mode
//! or per coach is generated from them: the id enums here, and the tables of files embedded per
//! id (`include_str!` needs literal paths) in `sandbox.rs`, `schema.rs` and the worker's prompts.
//! A table built from the list is a [`ByMode`] or [`ByCoach`], indexed by the id, so a lookup
//! cannot miss.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::{fmt, ops::Index, str::FromStr};

/// Calls `$callback!` with `Variant id` for each of the sixteen modes, in catalog order, after
/// any leading tokens. The one list of modes: `id` is the mode's id as clients spell it and the
/// name of its module (`modes/<id>.rs`, whose `Variant` is its deliverable type), its prompt and
/// its sample; adding a line here is a compile error wherever one of them is missing.
#[macro_export]
macro_rules! modes {
    ($callback:ident ! ( $($lead:tt)* )) => {
        $callback! {
            $($lead)*
            DiagnoseGrowth diagnose_growth,
            DesignOffer design_offer,
            RewritePricing rewrite_pricing,
            FunnelReview funnel_review,
            WriteOutboundSequence write_outbound_sequence,
            AuditFunction audit_function,
            HandleObjections handle_objections,
            PositionAgainstAlternatives position_against_alternatives,
            PlanCapacity plan_capacity,
            DraftSop draft_sop,
            RescueChurn rescue_churn,
            PlanOnboarding plan_onboarding,
            DecideStack decide_stack,
            MapAutomation map_automation,
            ScopeRole scope_role,
            MapAccountability map_accountability,
        }
    };
}

/// Calls `$callback!` with `Variant id` for each of the seven coaches, in catalog order.
#[macro_export]
macro_rules! coaches {
    ($callback:ident ! ( $($lead:tt)* )) => {
        $callback! {
            $($lead)*
            Mary mary,
            Reed reed,
            Iris iris,
            Oak oak,
            Violet violet,
            Fern fern,
            Willow willow,
        }
    };
}

/// A string that names no mode (or no coach).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} id {value:?}")]
pub struct UnknownId {
    kind: &'static str,
    value: String,
}

impl UnknownId {
    /// The string as given, cut to 64 characters: it comes from a client.
    fn new(kind: &'static str, value: &str) -> Self {
        let value = match value.char_indices().nth(64) {
            Some((end, _)) => format!("{}…", &value[..end]),
            None => value.to_owned(),
        };
        Self { kind, value }
    }
}

/// Defines an id enum (`as_str`, `ALL`, `parse`, serde as the id string) and its table type.
macro_rules! define_ids {
    ($name:ident, $table:ident, $kind:literal; $($variant:ident $id:ident),* $(,)?) => {
        /// Stored as its id string (`calls.agent`, `calls.mode`): a stored id that names
        /// nothing any more fails to load as a database error, never as a wrong coach or mode.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, sea_orm::DeriveValueType)]
        #[sea_orm(value_type = "String")]
        pub enum $name {
            $($variant),*
        }

        impl $name {
            /// Every id, in catalog order.
            pub const ALL: [$name; [$(stringify!($id)),*].len()] = [$($name::$variant),*];

            /// The id as clients spell it (snake_case).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($id)),*
                }
            }

            pub fn parse(s: &str) -> Result<Self, UnknownId> {
                match s {
                    $(stringify!($id) => Ok($name::$variant),)*
                    _ => Err(UnknownId::new($kind, s)),
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownId;
            fn from_str(s: &str) -> Result<Self, UnknownId> {
                Self::parse(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(id: $name) -> Self {
                serde_json::Value::from(id.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }

        /// One value per id, indexed by the id. Build it from the id list macro so that the
        /// order is the ids' order by construction.
        #[derive(Debug)]
        pub struct $table<T>([T; $name::ALL.len()]);

        impl<T> $table<T> {
            /// `items` in the order of `ALL` (the order of the list macro).
            pub const fn new(items: [T; $name::ALL.len()]) -> Self {
                Self(items)
            }

            pub fn iter(&self) -> std::slice::Iter<'_, T> {
                self.0.iter()
            }

            /// Each id with its value.
            pub fn entries(&self) -> impl Iterator<Item = ($name, &T)> + '_ {
                $name::ALL.into_iter().zip(self.0.iter())
            }

            pub const fn len(&self) -> usize {
                self.0.len()
            }

            pub const fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// A table of `f(id, value)` for every entry.
            pub fn map<U>(&self, mut f: impl FnMut($name, &T) -> U) -> $table<U> {
                $table(std::array::from_fn(|i| f($name::ALL[i], &self.0[i])))
            }

            /// A table of `f(id, value)` for every entry, or the first error.
            pub fn try_map<U, E>(
                &self,
                mut f: impl FnMut($name, &T) -> Result<U, E>,
            ) -> Result<$table<U>, E> {
                let mut out = Vec::with_capacity(self.len());
                for (id, value) in self.entries() {
                    out.push(f(id, value)?);
                }
                match out.try_into() {
                    Ok(items) => Ok($table(items)),
                    // One item was pushed per entry of a table of exactly this length.
                    Err(_) => unreachable!("a mapped table has one item per id"),
                }
            }

            /// The values as a slice, in id order.
            pub const fn as_slice(&self) -> &[T] {
                &self.0
            }
        }

        impl<T> Index<$name> for $table<T> {
            type Output = T;
            fn index(&self, id: $name) -> &T {
                &self.0[id as usize]
            }
        }

        impl<'a, T> IntoIterator for &'a $table<T> {
            type Item = &'a T;
            type IntoIter = std::slice::Iter<'a, T>;
            fn into_iter(self) -> Self::IntoIter {
                self.0.iter()
            }
        }
    };
}

crate::modes!(define_ids!(ModeId, ByMode, "mode";));
crate::coaches!(define_ids!(CoachId, ByCoach, "coach";));

/// Position of an id in its table, for the catalog's compile-time order checks.
pub(super) const fn mode_index(id: ModeId) -> usize {
    id as usize
}

pub(super) const fn coach_index(id: CoachId) -> usize {
    id as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_id_round_trips_through_its_string_and_serde() {
        let mut seen = std::collections::HashSet::new();
        for id in ModeId::ALL {
            let s = id.as_str();
            assert!(seen.insert(s), "{s} listed twice");
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s} is not snake_case"
            );
            assert_eq!(ModeId::parse(s), Ok(id));
            assert_eq!(s.parse::<ModeId>(), Ok(id));
            assert_eq!(id.to_string(), s);
            let json = serde_json::to_string(&id).expect("serialise");
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<ModeId>(&json).expect("parse"), id);
        }
        assert_eq!(seen.len(), 16);
    }

    #[test]
    fn every_coach_id_round_trips_through_its_string_and_serde() {
        for id in CoachId::ALL {
            assert_eq!(CoachId::parse(id.as_str()), Ok(id));
            let json = serde_json::to_value(id).expect("serialise");
            assert_eq!(json, serde_json::json!(id.as_str()));
            assert_eq!(serde_json::from_value::<CoachId>(json).expect("parse"), id);
        }
        assert_eq!(CoachId::ALL.len(), 7);
    }

    #[test]
    fn unknown_ids_are_refused_naming_the_value() {
        let err = ModeId::parse("make_coffee").unwrap_err();
        assert_eq!(err.to_string(), "unknown mode id \"make_coffee\"");
        assert!(ModeId::parse("Diagnose_Growth").is_err());
        assert!(ModeId::parse("").is_err());
        let err = serde_json::from_str::<CoachId>("\"nobody\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown coach id \"nobody\""),
            "{err}"
        );
        let long = "x".repeat(10_000);
        assert!(ModeId::parse(&long).unwrap_err().to_string().len() < 100);
    }

    macro_rules! names_table {
        ($($variant:ident $id:ident),* $(,)?) => {
            ByMode::new([$(stringify!($id)),*])
        };
    }

    #[test]
    fn tables_are_indexed_by_id() {
        let names: ByMode<&str> = crate::modes!(names_table!());
        for id in ModeId::ALL {
            assert_eq!(names[id], id.as_str());
        }
        assert_eq!(names.entries().count(), 16);
    }
}
