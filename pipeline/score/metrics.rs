//! Correctness metrics over (truth, prediction) label pairs (`docs/egodyn.md` §4.4): accuracy,
//! balanced accuracy (mean recall over classes present in the truth) and macro-F1 (over the
//! union of true and predicted labels, so a label that is predicted but never true scores 0).

use std::collections::{BTreeMap, BTreeSet};

/// Metrics of one group of answers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct GroupScore {
    /// Questions in the group.
    pub n: usize,
    /// Responses the parser could map to a choice.
    pub parsed: usize,
    pub parsability: f64,
    /// Correct / all questions: an unparsed answer counts as wrong.
    pub accuracy: f64,
    /// Correct / parsed questions (the exclusion the published EgoDyn numbers use).
    pub accuracy_parsed: f64,
    /// Over parsed answers, labels pooled across the group's question types.
    pub balanced_accuracy: f64,
    pub macro_f1: f64,
}

/// The (truth, prediction) pairs of a group as counts, added one answer at a time: memory
/// follows the number of distinct labels, not of answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    n: usize,
    /// Parsed answers by (truth, prediction).
    parsed: BTreeMap<(String, String), usize>,
}

impl Counts {
    /// One answer: `predicted` is `None` when unparsed.
    pub(crate) fn add(&mut self, truth: &str, predicted: Option<&str>) {
        self.n += 1;
        if let Some(p) = predicted {
            *self
                .parsed
                .entry((truth.to_string(), p.to_string()))
                .or_default() += 1;
        }
    }

    pub(crate) fn score(&self) -> GroupScore {
        let n = self.n;
        let pairs = || {
            self.parsed
                .iter()
                .map(|((t, p), &k)| (t.as_str(), p.as_str(), k))
        };
        let parsed: usize = pairs().map(|(_, _, k)| k).sum();
        let count = |f: &dyn Fn(&str, &str) -> bool| -> usize {
            pairs().filter(|(t, p, _)| f(t, p)).map(|(_, _, k)| k).sum()
        };
        let correct = count(&|t, p| t == p);
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let truths: BTreeSet<&str> = pairs().map(|(t, _, _)| t).collect();
        let labels: BTreeSet<&str> = pairs().flat_map(|(t, p, _)| [t, p]).collect();
        let recall = |l: &str| ratio(count(&|t, p| t == l && p == l), count(&|t, _| t == l));
        let f1 = |l: &str| {
            let tp = count(&|t, p| t == l && p == l);
            let fp = count(&|t, p| t != l && p == l);
            let fn_ = count(&|t, p| t == l && p != l);
            ratio(2 * tp, 2 * tp + fp + fn_)
        };
        let mean = |v: Vec<f64>| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        GroupScore {
            n,
            parsed,
            parsability: ratio(parsed, n),
            accuracy: ratio(correct, n),
            accuracy_parsed: ratio(correct, parsed),
            balanced_accuracy: mean(truths.iter().map(|l| recall(l)).collect()),
            macro_f1: mean(labels.iter().map(|l| f1(l)).collect()),
        }
    }
}

/// `pairs`: `(truth, Some(prediction))` or `(truth, None)` when unparsed.
pub fn score(pairs: &[(String, Option<String>)]) -> GroupScore {
    let mut c = Counts::default();
    for (t, p) in pairs {
        c.add(t, p.as_deref());
    }
    c.score()
}
