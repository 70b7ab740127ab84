//! The blind audit of a split of any size, in memory that follows its vocabulary rather than
//! its rows: the rows are read twice instead of held.
//!
//! The baselines are counts, so the fit on every fold but `k` is the sum of the other folds'
//! counts. With at least [`MAX_FOLDS`] scenes a row's fold is known as soon as its scene is
//! (a hash of the scene's name), so the first read counts each fold and the second scores each
//! row against the fit that leaves its fold out. What a row's outcome adds to the tallies is
//! kept (eight bytes) and summed at the end in [`Collector::finish`]'s order, families by name,
//! then folds, then rows, so both give the same numbers to the bit. A split with fewer scenes
//! is small, and its folds depend on how many there are: it goes through the collector.

use std::collections::{BTreeMap, BTreeSet};

use super::fit::{scene_fold, Fit};
use super::rows::Rows;
use super::{Audit, Collector, Grouping, Tally, MAX_FOLDS};
use crate::qa::QaRecord;
use crate::Result;

/// One row's outcome: its type key, its number of options and what each baseline got right.
type Scored = (u32, u16, [bool; 3]);

/// The audit of the rows `read` passes to its argument, the same rows in the same order each
/// time it is called (twice).
pub(crate) fn audit(
    mut read: impl FnMut(&mut dyn FnMut(&QaRecord)) -> Result<()>,
) -> Result<Audit> {
    let mut rows = Rows::default();
    rows.no_ids = true;
    let mut scenes: BTreeSet<u32> = BTreeSet::new();
    let mut parts: BTreeMap<u32, Vec<Fit>> = BTreeMap::new();
    read(&mut |r| {
        let Some(row) = rows.row_of(r) else { return };
        scenes.insert(row.scene);
        let k = scene_fold(rows.names.name(row.scene), MAX_FOLDS);
        parts
            .entry(row.family)
            .or_insert_with(|| (0..MAX_FOLDS).map(|_| Fit::default()).collect())[k]
            .add(&rows, &row);
    })?;
    if scenes.len() < MAX_FOLDS {
        drop(parts);
        let mut c = Collector::for_audit();
        read(&mut |r| c.add(r))?;
        return Ok(c.finish());
    }
    let held: BTreeMap<u32, Vec<Fit>> = parts
        .iter()
        .map(|(&f, p)| (f, (0..MAX_FOLDS).map(|k| Fit::all_but(p, k)).collect()))
        .collect();
    drop(parts);
    let mut scored: BTreeMap<u32, Vec<Vec<Scored>>> = BTreeMap::new();
    read(&mut |r| {
        let Some(row) = rows.row_of(r) else { return };
        let k = scene_fold(rows.names.name(row.scene), MAX_FOLDS);
        let Some(fit) = held.get(&row.family).map(|f| &f[k]) else {
            return;
        };
        let n = rows.options(&row).len().min(usize::from(u16::MAX)) as u16;
        scored
            .entry(row.family)
            .or_insert_with(|| vec![Vec::new(); MAX_FOLDS])[k]
            .push((row.key, n, fit.right(&rows, &row)));
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
        folds: MAX_FOLDS,
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
