//! The sixteen modes: tier (hence price and caps), summary and recommended context (spec 2.2),
//! each stated in its own module (`crate::modes::<id>::MODE`) and gathered here in list order.

use super::{ByMode, Mode, ids::mode_index};

macro_rules! table {
    ($($variant:ident $id:ident),* $(,)?) => {
        [$(crate::modes::$id::MODE),*]
    };
}

const TABLE: [Mode; super::ModeId::ALL.len()] = crate::modes!(table!());

/// Keyed by [`ModeId`](super::ModeId): entry `i` is `ModeId::ALL[i]`, checked at compile time
/// below.
pub static MODES: ByMode<Mode> = ByMode::new(TABLE);

const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            mode_index(TABLE[i].id) == i,
            "each mode's MODE must carry its own id"
        );
        i += 1;
    }
};
