//! Before/after statistics of a balancing run: per (family, type) answer distributions, the
//! largest deviation from the target share, and the majority-answer accuracy, i.e. what a
//! model that never looks at the images scores by always giving the most common answer.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use super::{BalanceOutcome, Options};
use crate::qa::QaRecord;

/// Answer counts per `family/type`, and answer-letter counts per family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
    pub letters: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Distribution {
    pub fn of(rows: &[QaRecord]) -> Self {
        let mut d = Distribution::default();
        for r in rows {
            let key = format!("{}/{}", r.family, r.question_type);
            d.add(&r.family, &key, &r.answer, &r.answer_letter);
        }
        d
    }

    /// Counts one row of `family` whose type key (`family/type`) is `key`.
    pub fn add(&mut self, family: &str, key: &str, answer: &str, letter: &str) {
        *self
            .answers
            .entry(key.to_string())
            .or_default()
            .entry(answer.to_string())
            .or_default() += 1;
        *self
            .letters
            .entry(family.to_string())
            .or_default()
            .entry(letter.to_string())
            .or_default() += 1;
    }

    /// Rows of a type.
    pub fn total(&self, q: &str) -> u64 {
        self.answers.get(q).map_or(0, |m| m.values().sum())
    }

    /// The accuracy of always answering the most common answer of `q`.
    pub(crate) fn majority_accuracy(&self, q: &str) -> f64 {
        let n = self.total(q);
        let top = self
            .answers
            .get(q)
            .and_then(|m| m.values().max().copied())
            .unwrap_or(0);
        if n == 0 {
            0.0
        } else {
            top as f64 / n as f64
        }
    }

    /// Row-weighted majority accuracy over all types.
    pub fn overall_majority_accuracy(&self) -> f64 {
        let (hit, n) = self.answers.keys().fold((0.0, 0u64), |(h, n), q| {
            let t = self.total(q);
            (h + self.majority_accuracy(q) * t as f64, n + t)
        });
        if n == 0 {
            0.0
        } else {
            hit / n as f64
        }
    }

    /// `max |share − target|` over the classes of `q`; `classes` are the classes the target
    /// is spread over (uniform unless `targets` names them).
    pub(crate) fn max_deviation(
        &self,
        q: &str,
        classes: &[String],
        targets: Option<&BTreeMap<String, f64>>,
    ) -> f64 {
        let n = self.total(q).max(1) as f64;
        let m = self.answers.get(q);
        classes
            .iter()
            .map(|c| {
                let share = m.and_then(|m| m.get(c)).copied().unwrap_or(0) as f64 / n;
                let t = targets
                    .and_then(|t| t.get(c).copied())
                    .unwrap_or(1.0 / classes.len().max(1) as f64);
                (share - t).abs()
            })
            .fold(0.0, f64::max)
    }
}

fn classes_of(d: &Distribution, q: &str) -> Vec<String> {
    d.answers
        .get(q)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The Markdown report.
pub(crate) fn report_markdown(o: &BalanceOutcome, opts: &Options) -> String {
    let mut s = String::new();
    let spec = &opts.spec;
    let _ = writeln!(s, "# Balancing report\n");
    let _ = writeln!(
        s,
        "Mode `{:?}`, target {} items, source caps {:?}, type cap {:?}, letters balanced: {}.\n",
        spec.mode, spec.target, spec.source_caps, opts.type_cap, opts.balance_letters
    );
    let _ =
        writeln!(
        s,
        "Pool: {} items, {} rows. Selected: {} items, {} rows; {} fallback steps; shortfall {}.\n",
        o.items_in,
        o.before.answers.keys().map(|q| o.before.total(q)).sum::<u64>(),
        o.selection.chosen.len(),
        o.rows,
        o.selection.fallbacks,
        o.selection.shortfall
    );
    let _ = writeln!(
        s,
        "Majority-answer accuracy (always the most common answer, no image): {:.3} before, {:.3} after.\n",
        o.before.overall_majority_accuracy(),
        o.after.overall_majority_accuracy()
    );
    let _ = writeln!(
        s,
        "| type | before | after | max deviation before → after | majority acc. before → after |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for q in o.before.answers.keys() {
        let cls = classes_of(&o.before, q);
        let fmt = |d: &Distribution| {
            cls.iter()
                .map(|c| {
                    format!(
                        "{c} {}",
                        d.answers
                            .get(q)
                            .and_then(|m| m.get(c))
                            .copied()
                            .unwrap_or(0)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let t = spec.targets.get(q);
        let _ = writeln!(
            s,
            "| {q} | {} | {} | {:.3} → {:.3} | {:.3} → {:.3} |",
            fmt(&o.before),
            fmt(&o.after),
            o.before.max_deviation(q, &cls, t),
            o.after.max_deviation(q, &cls, t),
            o.before.majority_accuracy(q),
            o.after.majority_accuracy(q)
        );
    }
    let _ = writeln!(s, "\n| family | answer letters after |\n|---|---|");
    for (f, m) in &o.after.letters {
        let l = m
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(s, "| {f} | {l} |");
    }
    s
}

/// The same figures as JSON.
pub(crate) fn report_json(o: &BalanceOutcome, opts: &Options) -> serde_json::Value {
    let per_type: serde_json::Map<String, serde_json::Value> = o
        .before
        .answers
        .keys()
        .map(|q| {
            let cls = classes_of(&o.before, q);
            let t = opts.spec.targets.get(q);
            (
                q.clone(),
                json!({
                    "before": o.before.answers.get(q),
                    "after": o.after.answers.get(q),
                    "max_deviation_before": o.before.max_deviation(q, &cls, t),
                    "max_deviation_after": o.after.max_deviation(q, &cls, t),
                    "majority_accuracy_before": o.before.majority_accuracy(q),
                    "majority_accuracy_after": o.after.majority_accuracy(q),
                }),
            )
        })
        .collect();
    json!({
        "mode": opts.spec.mode,
        "target_items": opts.spec.target,
        "source_caps": opts.spec.source_caps,
        "type_cap": opts.type_cap,
        "balance_letters": opts.balance_letters,
        "prune_options": opts.prune_options,
        "items_in": o.items_in,
        "items_selected": o.selection.chosen.len(),
        "rows_selected": o.rows,
        "fallbacks": o.selection.fallbacks,
        "shortfall": o.selection.shortfall,
        "majority_accuracy_before": o.before.overall_majority_accuracy(),
        "majority_accuracy_after": o.after.overall_majority_accuracy(),
        "letters_after": o.after.letters,
        "per_type": per_type,
    })
}
