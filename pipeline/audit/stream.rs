//! The blind audit of a split of any size: the rows are read twice instead of held, and memory
//! follows what the baselines count (letters, templates, answers, and pairs of answer and word)
//! rather than the rows.
//!
//! The baselines are counts, so the fit on every fold but `k` is the other folds' counts
//! summed. With at least [`MAX_FOLDS`] scenes a row's fold is known as soon as its scene is (a
//! hash of the scene's name), so the first read counts each key per fold, and the second scores
//! each row against the counts that leave its fold out. What a row's outcome adds to the
//! tallies is kept (eight bytes) and summed at the end in [`Collector::finish`]'s order,
//! families by name, then folds, then rows, so both give the same numbers to the bit. A split
//! with fewer scenes is small, and its folds depend on how many there are: it goes through the
//! collector.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::fit::{scene_fold, Counts};
use super::rows::{Row, Rows};
use super::{Audit, Collector, Grouping, Tally, MAX_FOLDS};
use crate::qa::QaRecord;
use crate::Result;

const K: usize = MAX_FOLDS;

/// One row's outcome: its type key, its number of options and what each baseline got right.
type Scored = (u32, u16, [bool; 3]);

/// One family's counts, each kept per fold: what [`super::fit::Fit`] counts, with one entry
/// per key for all folds together (a pair of answer and word is stored once, not once per
/// fold).
#[derive(Default)]
struct FoldCounts {
    letters: BTreeMap<u8, [u32; K]>,
    templates: HashMap<(u32, u32), [u32; K]>,
    answers: HashMap<u32, [u32; K]>,
    words: HashMap<(u32, u32), [u32; K]>,
    totals: HashMap<u32, [u64; K]>,
    vocabulary: HashMap<u32, [u32; K]>,
    rows: [usize; K],
    /// Per fold left out: distinct answers and words the other folds hold.
    answers_left: [usize; K],
    vocabulary_left: [usize; K],
}

impl FoldCounts {
    /// Counts `r` in fold `k`, as [`super::fit::Fit::add`] counts it.
    fn add(&mut self, rows: &Rows, r: &Row, k: usize) {
        let a = rows.answer_text(r);
        self.letters.entry(r.answer).or_default()[k] += 1;
        self.templates.entry((r.template, a)).or_default()[k] += 1;
        self.answers.entry(a).or_default()[k] += 1;
        for &w in rows.words(r) {
            self.words.entry((a, w)).or_default()[k] += 1;
            self.vocabulary.entry(w).or_default()[k] += 1;
        }
        self.totals.entry(a).or_default()[k] += rows.n_words(r) as u64;
        self.rows[k] += 1;
    }

    /// Notes what each fold's complement holds, once every row is counted.
    fn close(&mut self) {
        for k in 0..K {
            self.answers_left[k] = self.answers.values().filter(|c| left(c, k) > 0).count();
            self.vocabulary_left[k] = self.vocabulary.values().filter(|c| left(c, k) > 0).count();
        }
    }
}

/// A count over every fold but `k`.
fn left<T: Copy + Into<u64>>(per_fold: &[T; K], k: usize) -> usize {
    let all: u64 = per_fold.iter().map(|&c| c.into()).sum();
    (all - per_fold[k].into()) as usize
}

/// The fit on every fold of a family but one.
struct HeldOut<'a> {
    c: &'a FoldCounts,
    k: usize,
}

impl Counts for HeldOut<'_> {
    fn letters(&self) -> Vec<(u8, usize)> {
        self.c
            .letters
            .iter()
            .map(|(&l, n)| (l, left(n, self.k)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    fn template(&self, template: u32, answer: u32) -> usize {
        self.c
            .templates
            .get(&(template, answer))
            .map_or(0, |n| left(n, self.k))
    }

    fn answer(&self, answer: u32) -> usize {
        self.c.answers.get(&answer).map_or(0, |n| left(n, self.k))
    }

    fn word(&self, answer: u32, word: u32) -> usize {
        self.c
            .words
            .get(&(answer, word))
            .map_or(0, |n| left(n, self.k))
    }

    fn word_total(&self, answer: u32) -> usize {
        self.c.totals.get(&answer).map_or(0, |n| left(n, self.k))
    }

    fn answers(&self) -> usize {
        self.c.answers_left[self.k]
    }

    fn vocabulary(&self) -> usize {
        self.c.vocabulary_left[self.k]
    }

    fn rows(&self) -> usize {
        self.c.rows.iter().sum::<usize>() - self.c.rows[self.k]
    }
}

/// The audit of the rows `read` passes to its argument, the same rows in the same order each
/// time it is called (twice).
pub(crate) fn audit(
    mut read: impl FnMut(&mut dyn FnMut(&QaRecord)) -> Result<()>,
) -> Result<Audit> {
    let mut rows = Rows::default();
    rows.no_ids = true;
    let mut scenes: BTreeSet<u32> = BTreeSet::new();
    let mut counts: BTreeMap<u32, FoldCounts> = BTreeMap::new();
    read(&mut |r| {
        let Some(row) = rows.row_of(r) else { return };
        scenes.insert(row.scene);
        let k = scene_fold(rows.names.name(row.scene), K);
        counts.entry(row.family).or_default().add(&rows, &row, k);
    })?;
    if scenes.len() < K {
        drop(counts);
        let mut c = Collector::for_audit();
        read(&mut |r| c.add(r))?;
        return Ok(c.finish());
    }
    counts.values_mut().for_each(FoldCounts::close);
    let mut scored: BTreeMap<u32, Vec<Vec<Scored>>> = BTreeMap::new();
    read(&mut |r| {
        let Some(row) = rows.row_of(r) else { return };
        let k = scene_fold(rows.names.name(row.scene), K);
        let Some(c) = counts.get(&row.family) else {
            return;
        };
        let n = rows.options(&row).len().min(usize::from(u16::MAX)) as u16;
        scored
            .entry(row.family)
            .or_insert_with(|| vec![Vec::new(); K])[k]
            .push((row.key, n, HeldOut { c, k }.right(&rows, &row)));
    })?;
    let mut families: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut types: BTreeMap<u32, Tally> = BTreeMap::new();
    let mut by_name: Vec<(&str, &Vec<Vec<Scored>>)> = scored
        .iter()
        .map(|(&f, folds)| (rows.names.name(f), folds))
        .collect();
    by_name.sort_by_key(|(name, _)| *name);
    for (family, folds) in by_name {
        for &(key, n, right) in folds.iter().flatten() {
            let one = Tally {
                rows: 1,
                chance: 1.0 / f64::from(n),
                letter: usize::from(right[0]),
                template: usize::from(right[1]),
                text: usize::from(right[2]),
            };
            families.entry(family).or_default().add(&one);
            types.entry(key).or_default().add(&one);
        }
    }
    Ok(Audit {
        folds: K,
        grouping: Grouping::Scene,
        families: families
            .into_iter()
            .map(|(f, t)| (f.to_string(), t.baselines()))
            .collect(),
        types: types
            .into_iter()
            .map(|(k, t)| (rows.names.name(k).to_string(), t.baselines()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::{Layout, Prompt};

    /// Random rows over `scenes` scenes whose answers lean on their words, so that every
    /// baseline is right on some rows and wrong on others.
    fn records(scenes: usize, n: usize, seed: u64) -> Vec<QaRecord> {
        let mut rng = crate::synth::tokens::Rng::new(seed, "stream audit");
        let words = [
            "left", "right", "car", "truck", "near", "far", "ahead", "behind",
        ];
        (0..n)
            .map(|i| {
                let family = *rng.pick(&["metavqa", "sig", "egodyn"]);
                let options = 2 + rng.below(3);
                let answer = rng.below(options);
                let stem: Vec<&str> = (0..4)
                    .map(|w| {
                        if w == 0 && rng.below(3) > 0 {
                            words[answer]
                        } else {
                            *rng.pick(&words)
                        }
                    })
                    .collect();
                let choices: Vec<String> = (0..options).map(|o| format!("opt{o}")).collect();
                QaRecord {
                    qa_id: format!("{family}-{i:016x}"),
                    family: family.into(),
                    question_type: format!("t{}", rng.below(3)),
                    scene_id: format!("scene-{}", rng.below(scenes)),
                    clip_id: Some(format!("c{}", rng.below(4))),
                    prompt: Prompt {
                        layout: Layout::MetaVqa,
                        preamble: format!("view {}", rng.below(5)),
                        stem: format!("{} {}?", stem.join(" "), rng.below(50)),
                        ..Default::default()
                    },
                    answer: choices[answer].clone(),
                    answer_index: answer as u8,
                    choices,
                    ..Default::default()
                }
            })
            .collect()
    }

    #[test]
    fn two_reads_give_the_collectors_audit_to_the_bit() {
        for (scenes, seed) in [(5, 1), (12, 2), (40, 3), (3, 4), (1, 5)] {
            let recs = records(scenes, 1500, seed);
            let mut reads = 0;
            let got = audit(|each| {
                reads += 1;
                recs.iter().for_each(&mut *each);
                Ok(())
            })
            .unwrap();
            let want = super::super::audit(&recs);
            assert_eq!(got, want, "{scenes} scenes");
            assert!(want.folds > 0, "{scenes} scenes: nothing held out");
            let rows: usize = want.families.values().map(|b| b.rows).sum();
            assert_eq!(rows, recs.len());
            assert_eq!(reads, 2, "{scenes} scenes");
        }
    }
}
