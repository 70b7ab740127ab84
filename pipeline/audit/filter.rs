//! The blind filter: rows the baselines answer from the text alone, dropped until every
//! family is within its margin of chance.

use std::collections::BTreeMap;

use serde::Serialize;

use super::fit::{self, Outcome};
use super::rows::Rows;
use super::Collector;
#[cfg(test)]
use crate::qa::QaRecord;

/// The names of the baselines, in the order of [`Outcome::right`].
const BASELINES: [&str; 3] = [
    "letter prior",
    "answer prior per template",
    "question-only classifier",
];

/// Rounds of [`Collector::filter`] at most.
const MAX_ROUNDS: usize = 40;

/// A row [`Collector::filter`] removed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Removed {
    pub qa_id: String,
    pub reason: String,
}

/// Drops rows that blind baselines answer from the text alone until every family's best blind
/// baseline is within `margin` of chance. Each template's answers are first flattened
/// (`flatten_templates`); then each round refits the baselines (scenes held out, or a
/// single scene's clips and keyframes; rows that cannot be held out are not judged),
/// and in every family still over the margin drops, among the rows its best baseline gets
/// right, the first by `qa_id` — as many as would bring that accuracy to the margin, at most a
/// quarter of them, so that the refit can respond. Returns which records to keep.
#[cfg(test)]
pub(crate) fn filter(records: &[QaRecord], margin: f64) -> (Vec<bool>, Vec<Removed>) {
    let mut c = Collector::default();
    records.iter().for_each(|r| c.add(r));
    c.filter(margin)
}

impl Collector {
    /// [`Collector::filter`] over the records added: which to keep, in the order they were added.
    pub fn filter(self, margin: f64) -> (Vec<bool>, Vec<Removed>) {
        let c = self.in_order();
        filter_rows(&c.rows, &c.index, c.added, margin)
    }
}

fn filter_rows(
    rows: &Rows,
    index: &[usize],
    records: usize,
    margin: f64,
) -> (Vec<bool>, Vec<Removed>) {
    let (mut keep, mut removed) = flatten_templates(rows);
    for _ in 0..MAX_ROUNDS {
        let kept: Vec<usize> = (0..rows.rows.len()).filter(|&i| keep[i]).collect();
        let mut outcomes = Vec::new();
        fit::outcomes(rows, &kept, |o| outcomes.push(o));
        let mut by_family: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
        for o in &outcomes {
            by_family
                .entry(rows.names.name(o.family))
                .or_default()
                .push(o);
        }
        let mut dropped_any = false;
        for (family, group) in by_family {
            let n = group.len() as f64;
            let chance = group.iter().map(|o| o.chance).sum::<f64>() / n;
            let acc = |b: usize| group.iter().filter(|o| o.right[b]).count() as f64 / n;
            let best = (0..3)
                .max_by(|&a, &b| acc(a).total_cmp(&acc(b)))
                .unwrap_or(0);
            let target = chance + margin;
            if acc(best) <= target {
                continue;
            }
            let mut correct: Vec<usize> = group
                .iter()
                .filter(|o| o.right[best])
                .map(|o| o.row)
                .collect();
            correct.sort_by(|&a, &b| rows.qa_ids.get(a).cmp(rows.qa_ids.get(b)));
            let c = correct.len() as f64;
            let need = ((c - target * n) / (1.0 - target).max(1e-9))
                .ceil()
                .max(1.0) as usize;
            let take = need.min(correct.len().div_ceil(4)).max(1);
            for &i in correct.iter().take(take) {
                keep[i] = false;
                removed.push(Removed {
                    qa_id: rows.qa_ids.get(i).to_string(),
                    reason: format!(
                        "the {} answers it without the image ({family}: {:.3} against chance {chance:.3})",
                        BASELINES[best],
                        acc(best)
                    ),
                });
                dropped_any = true;
            }
        }
        if !dropped_any {
            break;
        }
    }
    // Records the baselines cannot score (no options) are kept.
    let mut out = vec![true; records];
    for (row, &i) in index.iter().enumerate() {
        out[i] = keep[row];
    }
    (out, removed)
}

/// The first step of [`Collector::filter`]: within each family's question template (the stem a
/// model reads, numbers masked), no answer keeps more rows than the template's rarest answer, and a
/// template that only ever has one answer keeps one row. This removes what any reader of the text
/// could learn from it, whatever the baseline, before the held-out baselines look for what is left;
/// the rows dropped are the last by `qa_id` (a hash: an unbiased sample).
fn flatten_templates(rows: &Rows) -> (Vec<bool>, Vec<Removed>) {
    let name = |id| rows.names.name(id);
    let mut groups: BTreeMap<(&str, &str), BTreeMap<&str, Vec<usize>>> = BTreeMap::new();
    for (i, r) in rows.rows.iter().enumerate() {
        groups
            .entry((name(r.family), name(r.template)))
            .or_default()
            .entry(name(rows.answer_text(r)))
            .or_default()
            .push(i);
    }
    let mut keep = vec![true; rows.rows.len()];
    let mut removed = Vec::new();
    for ((family, tpl), answers) in groups {
        let cap = if answers.len() == 1 {
            1
        } else {
            answers.values().map(Vec::len).min().unwrap_or(0)
        };
        for (answer, mut group) in answers {
            group.sort_by(|&a, &b| rows.qa_ids.get(a).cmp(rows.qa_ids.get(b)));
            let n = group.len();
            for &i in group.iter().skip(cap) {
                keep[i] = false;
                removed.push(Removed {
                    qa_id: rows.qa_ids.get(i).to_string(),
                    reason: format!(
                        "its template answers {answer:?} in {n} rows where its rarest answer \
                         has {cap} ({family}: {tpl:?})"
                    ),
                });
            }
        }
    }
    (keep, removed)
}
