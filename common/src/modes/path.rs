//! JSON pointers written as field accesses on the typed deliverable, so that renaming a field
//! breaks every pointer to it at compile time. Each macro type-checks its access in a closure
//! that is never called, and writes the pointer with the field names as they are spelt (the
//! deliverables rename no field, so the Rust name is the published name).

/// The pointer, in the envelope, of a field of the deliverable `d`:
/// `at!(d.stages[i].leak)` is `/deliverable/stages/{i}/leak`.
macro_rules! at {
    (@push $p:ident) => {};
    (@push $p:ident . $field:ident $($rest:tt)*) => {
        $p.push('/');
        $p.push_str(stringify!($field));
        $crate::modes::path::at!(@push $p $($rest)*);
    };
    (@push $p:ident [$index:expr] $($rest:tt)*) => {
        $p.push('/');
        $p.push_str(&($index).to_string());
        $crate::modes::path::at!(@push $p $($rest)*);
    };
    ($d:ident $($access:tt)+) => {{
        let _typed = || {
            let _ = &$d $($access)+;
        };
        let mut p = String::from("/deliverable");
        $crate::modes::path::at!(@push p $($access)+);
        p
    }};
}

/// A pattern of deliverable fields, relative to the deliverable, for [`super::Kinds`]:
/// `pattern!(Self: stages[_].fix)` is `/stages/*/fix`, `[_]` standing for any index and `.*`
/// for any field (after which the access is no longer checked).
macro_rules! pattern {
    (@check $d:ident [$($acc:tt)*]) => {
        let _ = &$d $($acc)*;
    };
    (@check $d:ident [$($acc:tt)*] . * $($rest:tt)*) => {
        let _ = &$d $($acc)*;
    };
    (@check $d:ident [$($acc:tt)*] . $field:ident $($rest:tt)*) => {
        $crate::modes::path::pattern!(@check $d [$($acc)* . $field] $($rest)*)
    };
    (@check $d:ident [$($acc:tt)*] [_] $($rest:tt)*) => {
        $crate::modes::path::pattern!(@check $d [$($acc)* [0]] $($rest)*)
    };
    (@text [$($s:expr),*]) => {
        concat!($($s),*)
    };
    (@text [$($s:expr),*] . * $($rest:tt)*) => {
        $crate::modes::path::pattern!(@text [$($s,)* "/*"] $($rest)*)
    };
    (@text [$($s:expr),*] . $field:ident $($rest:tt)*) => {
        $crate::modes::path::pattern!(@text [$($s,)* "/", stringify!($field)] $($rest)*)
    };
    (@text [$($s:expr),*] [_] $($rest:tt)*) => {
        $crate::modes::path::pattern!(@text [$($s,)* "/*"] $($rest)*)
    };
    ($t:ty : $field:ident $($rest:tt)*) => {{
        let _typed = |d: &$t| {
            $crate::modes::path::pattern!(@check d [. $field] $($rest)*);
        };
        $crate::modes::path::pattern!(@text ["/", stringify!($field)] $($rest)*)
    }};
}

pub(crate) use {at, pattern};

#[cfg(test)]
mod tests {
    struct Stage {
        leak: String,
    }
    struct Brief {
        goal: String,
    }
    struct Funnel {
        stages: Vec<Stage>,
        brief: Brief,
    }

    #[test]
    fn pointers_and_patterns_are_written_from_field_accesses() {
        let d = Funnel {
            stages: vec![],
            brief: Brief {
                goal: String::new(),
            },
        };
        let i = 3;
        assert_eq!(at!(d.stages[i].leak), "/deliverable/stages/3/leak");
        assert_eq!(at!(d.stages[i + 1]), "/deliverable/stages/4");
        assert_eq!(at!(d.brief.goal), "/deliverable/brief/goal");
        assert_eq!(at!(d.stages), "/deliverable/stages");
        assert_eq!(pattern!(Funnel: stages[_].leak), "/stages/*/leak");
        assert_eq!(pattern!(Funnel: stages[_].*), "/stages/*/*");
        assert_eq!(pattern!(Funnel: brief.*[_]), "/brief/*/*");
        assert_eq!(pattern!(Funnel: brief.goal), "/brief/goal");
        // Nothing was read: the accesses are only type-checked (an empty list has no item 3).
        assert!(d.stages.is_empty() && d.brief.goal.is_empty());
    }
}
