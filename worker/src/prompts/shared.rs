//! One copy of each distinct system prompt, shared by every call in flight that reads it.
//!
//! A system prompt is about 10 KiB and is held for the whole wait on the model (a transport
//! retry or a re-ask sends it again). Calls with the same coach, mode, missing fields, figures
//! and ceiling read the same text, so thousands of calls waiting at once held thousands of equal
//! copies (issue 31). The table holds weak references: a prompt lives as long as some call holds
//! it, and the table never keeps more than a bounded number of dead entries.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

/// Dead entries are swept when the table reaches this size, and then at twice the live count:
/// a sweep costs one pass per doubling, and a dead entry's memory is freed by the sweep (a
/// `Weak<str>` keeps its allocation).
const FIRST_SWEEP: usize = 64;

/// Prompts by what they are made from.
pub(super) struct Shared<K> {
    table: Mutex<Table<K>>,
}

struct Table<K> {
    prompts: HashMap<K, Weak<str>>,
    sweep_at: usize,
}

impl<K: Hash + Eq> Shared<K> {
    pub(super) fn new() -> Self {
        Self {
            table: Mutex::new(Table {
                prompts: HashMap::new(),
                sweep_at: FIRST_SWEEP,
            }),
        }
    }

    /// The prompt for `key`: the one a call in flight already holds, or `render`'s, kept for
    /// the next call with the same key. `render` runs under the lock (a few microseconds), so
    /// two calls with a new key never build it twice.
    pub(super) fn get(&self, key: K, render: impl FnOnce(&K) -> String) -> Arc<str> {
        // A panic in `render` leaves the table as it was: nothing is half-written.
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(prompt) = table.prompts.get(&key).and_then(Weak::upgrade) {
            return prompt;
        }
        let prompt: Arc<str> = Arc::from(render(&key));
        if table.prompts.len() >= table.sweep_at {
            table.prompts.retain(|_, p| p.strong_count() > 0);
            table.sweep_at = (table.prompts.len() * 2).max(FIRST_SWEEP);
        }
        table.prompts.insert(key, Arc::downgrade(&prompt));
        prompt
    }

    /// Entries in the table, live or not yet swept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .prompts
            .len()
    }
}

/// The process's table of system prompts.
pub(super) static SYSTEM: LazyLock<Shared<super::Key>> = LazyLock::new(Shared::new);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_with_the_same_key_hold_one_copy_and_a_new_key_gets_its_own() {
        let shared = Shared::new();
        let mut renders = 0;
        let a = shared.get(1, |k| {
            renders += 1;
            format!("prompt {k}")
        });
        let b = shared.get(1, |_| unreachable!("a live prompt is rendered again"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = shared.get(2, |k| format!("prompt {k}"));
        assert_eq!((&*a, &*c, renders), ("prompt 1", "prompt 2", 1));
    }

    #[test]
    fn a_prompt_no_call_holds_is_rendered_again_and_dead_entries_are_swept() {
        let shared = Shared::new();
        drop(shared.get(0, |_| "first".to_owned()));
        assert_eq!(&*shared.get(0, |_| "again".to_owned()), "again");
        for k in 0..10 * FIRST_SWEEP {
            drop(shared.get(k, |k| k.to_string()));
        }
        let held: Vec<Arc<str>> = (0..3).map(|k| shared.get(k, |k| k.to_string())).collect();
        assert!(
            shared.len() <= FIRST_SWEEP,
            "{} entries kept for prompts no call holds",
            shared.len()
        );
        assert_eq!(held.len(), 3);
    }
}
