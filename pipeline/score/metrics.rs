//! Correctness metrics over (truth, prediction) label pairs (`docs/egodyn.md` §4.4): accuracy,
//! balanced accuracy (mean recall over classes present in the truth) and macro-F1 (over the
//! union of true and predicted labels, so a label that is predicted but never true scores 0).

use std::collections::BTreeSet;

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

/// `pairs`: `(truth, Some(prediction))` or `(truth, None)` when unparsed.
pub fn score(pairs: &[(String, Option<String>)]) -> GroupScore {
    let n = pairs.len();
    let parsed: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|(t, p)| p.as_deref().map(|p| (t.as_str(), p)))
        .collect();
    let correct = parsed.iter().filter(|(t, p)| t == p).count();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let truths: BTreeSet<&str> = parsed.iter().map(|(t, _)| *t).collect();
    let labels: BTreeSet<&str> = parsed.iter().flat_map(|(t, p)| [*t, *p]).collect();
    let count = |f: &dyn Fn(&(&str, &str)) -> bool| parsed.iter().filter(|x| f(x)).count();
    let recall = |l: &str| {
        ratio(
            count(&|(t, p)| *t == l && *p == l),
            count(&|(t, _)| *t == l),
        )
    };
    let f1 = |l: &str| {
        let tp = count(&|(t, p)| *t == l && *p == l);
        let fp = count(&|(t, p)| *t != l && *p == l);
        let fn_ = count(&|(t, p)| *t == l && *p != l);
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
        parsed: parsed.len(),
        parsability: ratio(parsed.len(), n),
        accuracy: ratio(correct, n),
        accuracy_parsed: ratio(correct, parsed.len()),
        balanced_accuracy: mean(truths.iter().map(|l| recall(l)).collect()),
        macro_f1: mean(labels.iter().map(|l| f1(l)).collect()),
    }
}
