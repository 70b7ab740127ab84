//! What the baselines see of each row, kept compact: every string a row carries (family,
//! type, scene, template, stem words, option texts) is interned once, so a row is a few ids
//! and the audit's memory follows the number of rows times a few dozen bytes, not the
//! prompts' and evidence's text.

use std::collections::HashMap;

use crate::qa::QaRecord;

/// Interned strings; ids are given in first-seen order.
#[derive(Default)]
pub(super) struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Names {
    pub(super) fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), i);
        i
    }

    pub(super) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// One scorable row: the prompt's stem, its options and the key, as ids into [`Names`].
pub(super) struct Row {
    pub family: u32,
    /// `family/type`.
    pub key: u32,
    pub scene: u32,
    /// The clip, or for a keyframe question its scene and frame ([`unit`]): the folds' unit
    /// when there is only one scene.
    pub unit: u32,
    /// The stem with numbers masked ([`template`]).
    pub template: u32,
    /// The preamble's and the stem's words ([`words`]).
    pub words: Box<[u32]>,
    pub options: Box<[u32]>,
    pub answer: u8,
}

impl Row {
    pub(super) fn answer_text(&self) -> u32 {
        self.options[usize::from(self.answer)]
    }
}

/// The rows of one split, in the order they were added, with their names.
#[derive(Default)]
pub(super) struct Rows {
    pub names: Names,
    pub rows: Vec<Row>,
    /// Per row, its record's `qa_id` ([`crate::audit::filter`] orders and names rows by it).
    pub qa_ids: Vec<Box<str>>,
}

impl Rows {
    /// Adds `r` when it can be scored (it has options and its key is one of them); returns
    /// whether it was added.
    pub(super) fn add(&mut self, r: &QaRecord) -> bool {
        if r.choices.is_empty() || usize::from(r.answer_index) >= r.choices.len() {
            return false;
        }
        let n = &mut self.names;
        let row = Row {
            family: n.id(&r.family),
            key: n.id(&format!("{}/{}", r.family, r.question_type)),
            scene: n.id(&r.scene_id),
            unit: n.id(&unit(r)),
            template: n.id(&template(&r.prompt.stem)),
            // Everything a model reads before the options: the preamble names the agents, their
            // classes, positions and cameras, which can give an answer away as well as the stem.
            words: words(&r.prompt.preamble)
                .iter()
                .chain(&words(&r.prompt.stem))
                .map(|w| n.id(w))
                .collect(),
            options: r.choices.iter().map(|c| n.id(c)).collect(),
            answer: r.answer_index,
        };
        self.rows.push(row);
        self.qa_ids.push(r.qa_id.as_str().into());
        true
    }

    /// Puts row `by[i]` at `i`.
    pub(super) fn permute(&mut self, by: &[usize]) {
        let rows = std::mem::take(&mut self.rows);
        let ids = std::mem::take(&mut self.qa_ids);
        let mut pairs: Vec<Option<(Row, Box<str>)>> = rows.into_iter().zip(ids).map(Some).collect();
        (self.rows, self.qa_ids) = by.iter().filter_map(|&i| pairs[i].take()).unzip();
    }
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
