//! A list typed by hand (`VK_BLACKBOX_SKIP`'s selectors, `VK_BLACKBOX_SHADERS`' entries) that counts what
//! each entry matched. An entry that matches nothing changes nothing, and a run that then still fails, or
//! reports nothing, would seem to clear what it named: the device's end says so, once per process.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The entries, how often each matched, how often they were tried, and whether the unmatched ones were
/// told of. Clones share the counts.
#[derive(Debug, Clone)]
pub struct Matched<T> {
    /// As given.
    pub entries: Vec<T>,
    hits: Arc<[AtomicU64]>,
    tries: Arc<AtomicU64>,
    told: Arc<AtomicBool>,
}

impl<T> Default for Matched<T> {
    fn default() -> Self {
        Matched {
            entries: Vec::new(),
            hits: Arc::default(),
            tries: Arc::default(),
            told: Arc::default(),
        }
    }
}

impl<T: std::fmt::Display> Matched<T> {
    /// These entries, none tried yet.
    pub fn new(entries: Vec<T>) -> Self {
        let hits = entries.iter().map(|_| AtomicU64::new(0)).collect();
        Matched {
            entries,
            hits,
            tries: Arc::default(),
            told: Arc::default(),
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether some entry matches (`matches`); counts the try, and each entry that matched.
    pub fn any(&self, matches: impl Fn(&T) -> bool) -> bool {
        self.tries.fetch_add(1, Ordering::Relaxed);
        let mut any = false;
        for (entry, hits) in self.entries.iter().zip(self.hits.iter()) {
            if matches(entry) {
                hits.fetch_add(1, Ordering::Relaxed);
                any = true;
            }
        }
        any
    }

    /// How many times [`Matched::any`] was asked.
    pub fn tries(&self) -> u64 {
        self.tries.load(Ordering::Relaxed)
    }

    /// The entries that have matched nothing so far.
    pub fn unmatched(&self) -> Vec<&T> {
        self.entries
            .iter()
            .zip(self.hits.iter())
            .filter(|(_, hits)| hits.load(Ordering::Relaxed) == 0)
            .map(|(entry, _)| entry)
            .collect()
    }

    /// The first time some entry has matched nothing: those entries, comma-separated, and the pronoun
    /// for them (`it`, `them`). `None` when every entry matched, or after the first time.
    pub fn unmatched_once(&self) -> Option<(String, &'static str)> {
        let unmatched = self.unmatched();
        if unmatched.is_empty() || self.told.swap(true, Ordering::Relaxed) {
            return None;
        }
        let names: Vec<String> = unmatched.iter().map(|e| e.to_string()).collect();
        let pronoun = if names.len() == 1 { "it" } else { "them" };
        Some((names.join(", "), pronoun))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_entry_and_tells_of_the_unmatched_once() {
        let list = Matched::new(vec!["sky".to_owned(), "sea".to_owned(), "sun".to_owned()]);
        assert!(list.any(|e| e == "sky"));
        assert!(!list.any(|e| e == "moon"));
        assert_eq!(list.tries(), 2);
        let shared = list.clone();
        assert!(shared.any(|e| e.starts_with("su")), "a clone counts too");
        assert_eq!(list.unmatched(), [&"sea".to_owned()]);
        assert_eq!(list.unmatched_once(), Some(("sea".to_owned(), "it")));
        assert_eq!(shared.unmatched_once(), None, "once, clones included");
        let two = Matched::new(vec![1, 2]);
        assert_eq!(two.unmatched_once(), Some(("1, 2".to_owned(), "them")));
        let all = Matched::new(vec![7]);
        assert!(all.any(|&e| e == 7));
        assert_eq!(all.unmatched_once(), None);
    }
}
