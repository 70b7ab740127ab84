//! What the baselines see of each row, kept compact: every string a row carries (family,
//! type, scene, template, stem words, option texts) is interned once, so a row is a few ids
//! and the audit's memory follows the number of rows times a few dozen bytes, not the
//! prompts' and evidence's text.

use std::collections::HashMap;

use crate::qa::compact::{Column, Lists, Names};
use crate::qa::QaRecord;

/// One scorable row: the prompt's stem, its options and the key, as ids into [`Names`].
pub(super) struct Row {
    pub family: u32,
    /// `family/type`.
    pub key: u32,
    pub scene: u32,
    /// The clip, or for a keyframe question its scene and frame ([`unit()`]): the folds' unit
    /// when there is only one scene.
    pub unit: u32,
    /// The stem with numbers masked ([`template`]).
    pub template: u32,
    /// The preamble's words ([`words`]) as a list of [`Rows`]: the questions on one frame
    /// share it.
    pub preamble: u32,
    /// The stem's words, a list of [`Rows`].
    pub stem: u32,
    /// The options' texts, a list of [`Rows`].
    pub options: u32,
    pub answer: u8,
}

/// The rows of one split, in the order they were added, with their names.
#[derive(Default)]
pub(super) struct Rows {
    pub names: Names,
    lists: Lists,
    pub rows: Vec<Row>,
    /// Per row, its record's `qa_id` ([`crate::audit::Collector::filter`] orders and names rows by
    /// it); empty when `no_ids` (an audit alone never names a row).
    pub qa_ids: Column,
    pub no_ids: bool,
}

impl Rows {
    /// Adds `r` when it can be scored (it has options and its key is one of them); returns
    /// whether it was added.
    pub(super) fn add(&mut self, r: &QaRecord) -> bool {
        if !scorable(r) {
            return false;
        }
        let n = &mut self.names;
        let row = Row {
            family: n.id(&r.family),
            key: n.id(&format!("{}/{}", r.family, r.question_type)),
            scene: n.id(&r.scene_id),
            unit: n.id(&unit(r)),
            template: n.id(&template(&r.prompt.stem)),
            preamble: self
                .lists
                .id(words(&r.prompt.preamble).iter().map(|w| n.id(w)).collect()),
            stem: self
                .lists
                .id(words(&r.prompt.stem).iter().map(|w| n.id(w)).collect()),
            options: self.lists.id(r.choices.iter().map(|c| n.id(c)).collect()),
            answer: r.answer_index,
        };
        push(&mut self.rows, row);
        if !self.no_ids {
            self.qa_ids.push(&r.qa_id);
        }
        true
    }

    /// Everything a model reads of `r` before the options: the preamble names the agents,
    /// their classes, positions and cameras, which can give an answer away as well as the stem.
    pub(super) fn words(&self, r: &Row) -> impl Iterator<Item = &u32> {
        self.lists
            .list(r.preamble)
            .iter()
            .chain(self.lists.list(r.stem))
    }

    pub(super) fn n_words(&self, r: &Row) -> usize {
        self.lists.list(r.preamble).len() + self.lists.list(r.stem).len()
    }

    pub(super) fn options(&self, r: &Row) -> &[u32] {
        self.lists.list(r.options)
    }

    pub(super) fn answer_text(&self, r: &Row) -> u32 {
        self.options(r)[usize::from(r.answer)]
    }

    /// Keeps the rows where `keep` is true, in their order, and rebuilds the names and lists
    /// from them alone: what the dropped rows alone named is freed.
    pub(super) fn retain(&mut self, keep: &[bool]) {
        let old = std::mem::take(self);
        self.no_ids = old.no_ids;
        self.rows = Vec::with_capacity(keep.iter().filter(|k| **k).count());
        let mut names: HashMap<u32, u32> = HashMap::new();
        let mut lists: HashMap<u32, u32> = HashMap::new();
        let mut kept = Vec::new();
        for (i, r) in old.rows.into_iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let mut name = |id: u32| {
                *names
                    .entry(id)
                    .or_insert_with(|| self.names.id(old.names.name(id)))
            };
            let (family, key, scene, unit, template) = (
                name(r.family),
                name(r.key),
                name(r.scene),
                name(r.unit),
                name(r.template),
            );
            let mut list = |id: u32| match lists.get(&id) {
                Some(&new) => new,
                None => {
                    let items = old
                        .lists
                        .list(id)
                        .iter()
                        .map(|&w| {
                            *names
                                .entry(w)
                                .or_insert_with(|| self.names.id(old.names.name(w)))
                        })
                        .collect();
                    let new = self.lists.id(items);
                    lists.insert(id, new);
                    new
                }
            };
            self.rows.push(Row {
                family,
                key,
                scene,
                unit,
                template,
                preamble: list(r.preamble),
                stem: list(r.stem),
                options: list(r.options),
                answer: r.answer,
            });
            kept.push(i);
        }
        if !self.no_ids {
            self.qa_ids = old.qa_ids.select(&kept);
        }
    }

    /// Puts row `by[i]` at `i`.
    pub(super) fn permute(&mut self, by: &[usize]) {
        let mut rows: Vec<Option<Row>> = std::mem::take(&mut self.rows)
            .into_iter()
            .map(Some)
            .collect();
        self.rows = by.iter().filter_map(|&i| rows[i].take()).collect();
        if !self.no_ids {
            self.qa_ids = self.qa_ids.select(by);
        }
    }
}

/// Appends `x`, growing a full `v` by a quarter rather than doubling it: the audit's per-row
/// vectors are its largest allocations, and a doubled one can hold almost twice the rows
/// there are.
pub(super) fn push<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 4 + 64);
    }
    v.push(x);
}

/// Keeps the items of `v` where `keep` is true, and gives back the room the others held.
pub(super) fn retain<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut k = keep.iter();
    v.retain(|_| *k.next().unwrap_or(&false));
    v.shrink_to_fit();
}

/// Whether the baselines can score `r`: it has options and its key is one of them.
pub(super) fn scorable(r: &QaRecord) -> bool {
    !r.choices.is_empty() && usize::from(r.answer_index) < r.choices.len()
}

/// The clip a row asks about, or its keyframe (scene and frame) when it asks about one
/// frame: its near-duplicates (the other questions on the same clip or frame) share it. The
/// parts are joined by a control character no id holds, so two units never share a name.
pub(super) fn unit(r: &QaRecord) -> String {
    match (&r.clip_id, r.frame_idx) {
        (Some(c), _) => format!("clip\u{1f}{}\u{1f}{c}", r.scene_id),
        (None, Some(f)) => format!("frame\u{1f}{}\u{1f}{f}", r.scene_id),
        (None, None) => format!("scene\u{1f}{}", r.scene_id),
    }
}

/// The stem's words, lower-cased, numbers left out.
pub(super) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// The stem with every digit masked: questions that differ only in their numbers share it.
pub(super) fn template(stem: &str) -> String {
    stem.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}
