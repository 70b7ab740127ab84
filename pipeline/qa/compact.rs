//! Per-row facts kept for every question of a release (balancing, the blind audit) stored
//! so that memory follows the number of distinct strings and lists, not the number of rows
//! times their text: names and lists are stored once and shared, ids sit end to end in one
//! buffer. At a million rows the difference is hundreds of megabytes.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

/// Values stored once, named by their index in first-seen order; the map and the list share
/// each value.
#[derive(Debug)]
pub(crate) struct Interner<T: ?Sized> {
    ids: HashMap<Arc<T>, u32>,
    items: Vec<Arc<T>>,
}

impl<T: ?Sized> Default for Interner<T> {
    fn default() -> Self {
        Self {
            ids: HashMap::new(),
            items: Vec::new(),
        }
    }
}

impl<T: ?Sized + Eq + Hash> Interner<T> {
    /// The index of `value`, added when new.
    fn intern<V: Borrow<T> + Into<Arc<T>>>(&mut self, value: V) -> u32 {
        if let Some(&i) = self.ids.get(value.borrow()) {
            return i;
        }
        let i = self.items.len() as u32;
        let shared: Arc<T> = value.into();
        self.items.push(shared.clone());
        self.ids.insert(shared, i);
        i
    }

    /// The index of `value`, if it was added.
    pub fn get(&self, value: &T) -> Option<u32> {
        self.ids.get(value).copied()
    }
}

/// Strings stored once (family, type, answer and option texts, words).
pub(crate) type Names = Interner<str>;

impl Names {
    /// The index of `s`, added when new.
    pub fn id(&mut self, s: &str) -> u32 {
        self.intern(s)
    }

    pub fn name(&self, i: u32) -> &str {
        &self.items[i as usize]
    }
}

/// Lists of ids stored once: the questions on one frame repeat its preamble, and a type's
/// stems and option lists repeat across its questions.
pub(crate) type Lists = Interner<[u32]>;

impl Lists {
    /// The index of `list`, added when new.
    pub fn id(&mut self, list: Vec<u32>) -> u32 {
        self.intern(list)
    }

    pub fn list(&self, i: u32) -> &[u32] {
        &self.items[i as usize]
    }
}

/// Strings appended end to end, named by their position: a row's `qa_id` without an
/// allocation of its own.
#[derive(Debug, Default)]
pub(crate) struct Column {
    text: String,
    ends: Vec<usize>,
}

impl Column {
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The strings at `by`, in that order.
    pub fn select(&self, by: &[usize]) -> Column {
        let mut out = Column::default();
        for &i in by {
            out.push(self.get(i));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lists_and_columns_give_back_what_went_in() {
        let mut n = Names::default();
        let words = ["left", "car", "left", "", "truck", "car"];
        let ids: Vec<u32> = words.iter().map(|w| n.id(w)).collect();
        assert_eq!(ids, [0, 1, 0, 2, 3, 1]);
        for (w, i) in words.iter().zip(&ids) {
            assert_eq!(n.name(*i), *w);
            assert_eq!(n.get(w), Some(*i));
        }
        assert_eq!(n.get("bus"), None);

        let mut l = Lists::default();
        let a = l.id(vec![3, 1, 2]);
        let b = l.id(vec![3, 1, 2]);
        let c = l.id(vec![3, 2, 1]);
        let e = l.id(Vec::new());
        assert_eq!((a, b, c, e), (0, 0, 1, 2), "an equal list is stored once");
        assert_eq!(l.list(a), &[3, 1, 2]);
        assert_eq!(l.list(c), &[3, 2, 1]);
        assert!(l.list(e).is_empty());

        let mut col = Column::default();
        let ids = ["q-0", "", "q-é-2", "q-3"];
        for s in ids {
            col.push(s);
        }
        assert_eq!(col.len(), 4);
        for (i, s) in ids.iter().enumerate() {
            assert_eq!(col.get(i), *s);
        }
        let picked = col.select(&[3, 0, 1]);
        assert_eq!(
            (0..3).map(|i| picked.get(i)).collect::<Vec<_>>(),
            ["q-3", "q-0", ""]
        );
    }
}
