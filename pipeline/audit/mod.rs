//! Blind baselines of a release: how well a model that never looks at an image answers it.
//!
//! Three baselines, each fitted on some scenes and scored on the others (folds by a hash of the
//! scene id, so no scene is in both), reported per family and per question type beside chance
//! (the mean of 1 / options). They are fitted per family on what a model reads, the prompt and
//! its options, and never on the question type, which a model does not see:
//!
//! - **letter prior**: always the letter most often correct in the fitting folds;
//! - **answer prior per template**: the answer most often correct for the question's template
//!   (its stem with numbers masked) among the options offered, falling back to the type;
//! - **question-only classifier**: multinomial naive Bayes over the words of the stem, choosing
//!   among the offered options' texts.
//!
//! A benchmark whose best blind baseline is well above chance measures the text, not vision.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::qa::QaRecord;

/// Folds at most (fewer when the release has fewer scenes).
pub const MAX_FOLDS: usize = 5;

/// One group's accuracies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Baselines {
    pub rows: usize,
    pub chance: f64,
    pub letter_prior: f64,
    pub template_prior: f64,
    pub question_only: f64,
}

impl Baselines {
    /// The best of the three.
    pub fn best(&self) -> f64 {
        self.letter_prior
            .max(self.template_prior)
            .max(self.question_only)
    }

    /// How far the best blind baseline is above chance.
    pub fn excess(&self) -> f64 {
        self.best() - self.chance
    }
}

/// The audit of a release's main split.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Audit {
    /// Folds the scenes were split into (1: a single scene, scored on what it was fitted on).
    pub folds: usize,
    pub families: BTreeMap<String, Baselines>,
    /// Keyed `family/type`.
    pub types: BTreeMap<String, Baselines>,
}

/// What the baselines see of a row.
struct Row {
    index: usize,
    key: String,
    family: String,
    fold: usize,
    template: String,
    words: Vec<String>,
    options: Vec<String>,
    answer: usize,
}

fn fold_of(scene: &str, folds: usize) -> usize {
    use sha2::Digest;
    let h = sha2::Sha256::digest(scene.as_bytes());
    (u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) % folds as u64) as usize
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

fn template(stem: &str) -> String {
    stem.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

fn rows_of(records: &[QaRecord]) -> (Vec<Row>, usize) {
    let scenes: BTreeSet<&str> = records.iter().map(|r| r.scene_id.as_str()).collect();
    let folds = scenes.len().clamp(1, MAX_FOLDS);
    let rows = records
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.choices.is_empty() && usize::from(r.answer_index) < r.choices.len())
        .map(|(index, r)| Row {
            index,
            key: format!("{}/{}", r.family, r.question_type),
            family: r.family.clone(),
            fold: fold_of(&r.scene_id, folds),
            template: template(&r.prompt.stem),
            words: words(&r.prompt.stem),
            options: r.choices.clone(),
            answer: usize::from(r.answer_index),
        })
        .collect();
    (rows, folds)
}

/// Per type, what the fitting folds say.
#[derive(Default)]
struct Fit {
    letters: BTreeMap<usize, usize>,
    by_template: BTreeMap<String, BTreeMap<String, usize>>,
    answers: BTreeMap<String, usize>,
    /// Naive Bayes: per answer, word counts and their total.
    word_counts: BTreeMap<String, BTreeMap<String, usize>>,
    word_totals: BTreeMap<String, usize>,
    vocabulary: BTreeSet<String>,
    rows: usize,
}

impl Fit {
    fn add(&mut self, r: &Row) {
        let a = &r.options[r.answer];
        *self.letters.entry(r.answer).or_default() += 1;
        *self
            .by_template
            .entry(r.template.clone())
            .or_default()
            .entry(a.clone())
            .or_default() += 1;
        *self.answers.entry(a.clone()).or_default() += 1;
        let wc = self.word_counts.entry(a.clone()).or_default();
        for w in &r.words {
            *wc.entry(w.clone()).or_default() += 1;
            self.vocabulary.insert(w.clone());
        }
        *self.word_totals.entry(a.clone()).or_default() += r.words.len();
        self.rows += 1;
    }

    fn letter(&self) -> Option<usize> {
        // Most frequent, the lowest letter on a tie.
        self.letters
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(l, _)| *l)
    }

    /// The offered option scoring highest under `score`; the first option on a tie.
    fn pick(options: &[String], score: impl Fn(&str) -> f64) -> usize {
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (i, o) in options.iter().enumerate() {
            let s = score(o);
            if s > best_score {
                best = i;
                best_score = s;
            }
        }
        best
    }

    fn template_guess(&self, r: &Row) -> usize {
        let counts = self.by_template.get(&r.template);
        Self::pick(&r.options, |o| {
            let t = counts.and_then(|c| c.get(o)).copied().unwrap_or(0);
            let a = self.answers.get(o).copied().unwrap_or(0);
            // The template's own counts first; the type's break ties.
            t as f64 * 1e6 + a as f64
        })
    }

    fn text_guess(&self, r: &Row) -> usize {
        let v = self.vocabulary.len().max(1) as f64;
        let n = self.rows.max(1) as f64;
        let classes = self.answers.len().max(1) as f64;
        Self::pick(&r.options, |o| {
            let prior = (self.answers.get(o).copied().unwrap_or(0) as f64 + 1.0) / (n + classes);
            let wc = self.word_counts.get(o);
            let total = self.word_totals.get(o).copied().unwrap_or(0) as f64;
            let mut s = prior.ln();
            for w in &r.words {
                let c = wc.and_then(|m| m.get(w)).copied().unwrap_or(0) as f64;
                s += ((c + 1.0) / (total + v)).ln();
            }
            s
        })
    }
}

/// Sums of correct guesses.
#[derive(Default, Clone, Copy)]
struct Tally {
    rows: usize,
    chance: f64,
    letter: usize,
    template: usize,
    text: usize,
}

impl Tally {
    fn baselines(&self) -> Baselines {
        let n = self.rows.max(1) as f64;
        Baselines {
            rows: self.rows,
            chance: self.chance / n,
            letter_prior: self.letter as f64 / n,
            template_prior: self.template as f64 / n,
            question_only: self.text as f64 / n,
        }
    }

    fn add(&mut self, o: &Tally) {
        self.rows += o.rows;
        self.chance += o.chance;
        self.letter += o.letter;
        self.template += o.template;
        self.text += o.text;
    }
}

/// Each scorable row's held-out outcome: its index in the records, its family and type key,
/// chance, and whether the letter prior, the template prior and the question-only classifier
/// got it right.
struct Outcome {
    index: usize,
    family: String,
    key: String,
    chance: f64,
    right: [bool; 3],
}

fn outcomes(records: &[QaRecord]) -> (usize, Vec<Outcome>) {
    let (rows, folds) = rows_of(records);
    let mut by_family: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_family.entry(r.family.as_str()).or_default().push(r);
    }
    let mut out = Vec::with_capacity(rows.len());
    for group in by_family.values() {
        for fold in 0..folds {
            let mut fit = Fit::default();
            for r in group.iter().filter(|r| folds == 1 || r.fold != fold) {
                fit.add(r);
            }
            for r in group.iter().filter(|r| r.fold == fold) {
                out.push(Outcome {
                    index: r.index,
                    family: r.family.clone(),
                    key: r.key.clone(),
                    chance: 1.0 / r.options.len() as f64,
                    right: [
                        fit.letter() == Some(r.answer),
                        fit.template_guess(r) == r.answer,
                        fit.text_guess(r) == r.answer,
                    ],
                });
            }
        }
    }
    (folds, out)
}

/// The audit of `records` (one split).
pub fn audit(records: &[QaRecord]) -> Audit {
    let (folds, outcomes) = outcomes(records);
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut types: BTreeMap<String, Tally> = BTreeMap::new();
    for o in &outcomes {
        let one = Tally {
            rows: 1,
            chance: o.chance,
            letter: usize::from(o.right[0]),
            template: usize::from(o.right[1]),
            text: usize::from(o.right[2]),
        };
        families.entry(o.family.clone()).or_default().add(&one);
        types.entry(o.key.clone()).or_default().add(&one);
    }
    Audit {
        folds,
        families: families
            .into_iter()
            .map(|(k, t)| (k, t.baselines()))
            .collect(),
        types: types.into_iter().map(|(k, t)| (k, t.baselines())).collect(),
    }
}

/// The names of the baselines, in the order of [`Outcome::right`].
const BASELINES: [&str; 3] = [
    "letter prior",
    "answer prior per template",
    "question-only classifier",
];

/// Rounds of [`filter`] at most.
const MAX_ROUNDS: usize = 40;

/// A row [`filter`] removed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Removed {
    pub qa_id: String,
    pub reason: String,
}

/// Drops rows that blind baselines answer from the text alone until every family's best blind
/// baseline is within `margin` of chance. Each template's answers are first flattened
/// ([`flatten_templates`]); then each round refits the baselines (scenes held out),
/// and in every family still over the margin drops, among the rows its best baseline gets
/// right, the first by `qa_id` — as many as would bring that accuracy to the margin, at most a
/// quarter of them, so that the refit can respond. Returns which records to keep.
pub fn filter(records: &[QaRecord], margin: f64) -> (Vec<bool>, Vec<Removed>) {
    let (mut keep, mut removed) = flatten_templates(records);
    for _ in 0..MAX_ROUNDS {
        let kept: Vec<usize> = (0..records.len()).filter(|&i| keep[i]).collect();
        let view: Vec<QaRecord> = kept.iter().map(|&i| records[i].clone()).collect();
        let (_, outcomes) = outcomes(&view);
        let mut by_family: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
        for o in &outcomes {
            by_family.entry(o.family.as_str()).or_default().push(o);
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
            let correct: Vec<&&Outcome> = {
                let mut c: Vec<&&Outcome> = group.iter().filter(|o| o.right[best]).collect();
                c.sort_by(|a, b| view[a.index].qa_id.cmp(&view[b.index].qa_id));
                c
            };
            let c = correct.len() as f64;
            let need = ((c - target * n) / (1.0 - target).max(1e-9))
                .ceil()
                .max(1.0) as usize;
            let take = need.min(correct.len().div_ceil(4)).max(1);
            for o in correct.into_iter().take(take) {
                let i = kept[o.index];
                keep[i] = false;
                removed.push(Removed {
                    qa_id: records[i].qa_id.clone(),
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
    (keep, removed)
}

/// The first step of [`filter`]: within each family's question template (the stem a model
/// reads, numbers masked), no answer keeps more rows than the template's rarest answer, and a
/// template that only ever has one answer keeps one row. This removes what any reader of the
/// text could learn from it, whatever the baseline, before the held-out baselines look for
/// what is left; the rows dropped are the last by `qa_id` (a hash: an unbiased sample).
fn flatten_templates(records: &[QaRecord]) -> (Vec<bool>, Vec<Removed>) {
    let mut groups: BTreeMap<(&str, String), BTreeMap<&str, Vec<usize>>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        groups
            .entry((r.family.as_str(), template(&r.prompt.stem)))
            .or_default()
            .entry(r.answer.as_str())
            .or_default()
            .push(i);
    }
    let mut keep = vec![true; records.len()];
    let mut removed = Vec::new();
    for ((family, tpl), answers) in groups {
        let cap = if answers.len() == 1 {
            1
        } else {
            answers.values().map(Vec::len).min().unwrap_or(0)
        };
        for (answer, mut rows) in answers {
            rows.sort_by(|&a, &b| records[a].qa_id.cmp(&records[b].qa_id));
            let n = rows.len();
            for &i in rows.iter().skip(cap) {
                keep[i] = false;
                removed.push(Removed {
                    qa_id: records[i].qa_id.clone(),
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

/// A Markdown table: one line per family, then per type.
pub fn table(a: &Audit) -> String {
    let mut s = format!(
        "blind baselines (fitted and scored on different scenes, {} folds)\n\n\
         | group | rows | chance | letter prior | answer prior per template | question only | best − chance |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        a.folds
    );
    let line = |name: &str, b: &Baselines| {
        format!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:+.3} |\n",
            b.rows,
            b.chance,
            b.letter_prior,
            b.template_prior,
            b.question_only,
            b.excess()
        )
    };
    for (f, b) in &a.families {
        s.push_str(&line(&format!("**{f}**"), b));
    }
    for (k, b) in &a.types {
        s.push_str(&line(k, b));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::{Layout, Prompt};

    fn row(scene: usize, stem: &str, choices: &[&str], answer: u8) -> QaRecord {
        QaRecord {
            qa_id: format!("{scene}-{stem}-{answer}"),
            family: "f".into(),
            question_type: "t".into(),
            prompt: Prompt::new(Layout::Sig, stem),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            answer_index: answer,
            answer: choices[usize::from(answer)].to_string(),
            scene_id: format!("scene-{scene}"),
            ..Default::default()
        }
    }

    #[test]
    fn a_text_cue_is_found_and_a_fair_set_is_at_chance() {
        // "truck" always means "far", "car" always "near": readable from the text alone.
        let mut biased = Vec::new();
        let mut fair = Vec::new();
        for scene in 0..10 {
            for k in 0..20 {
                let (noun, ans) = if k % 2 == 0 { ("truck", 1) } else { ("car", 0) };
                let stem = format!("How far is the {noun}?");
                biased.push(row(scene, &stem, &["near", "far"], ans));
                // The same questions with answers that do not depend on the noun.
                let fair_ans = u8::from((k / 2 + scene) % 2 == 0);
                fair.push(row(scene, &stem, &["near", "far"], fair_ans));
            }
        }
        let a = audit(&biased);
        assert_eq!(a.folds, MAX_FOLDS);
        let b = &a.families["f"];
        assert!((b.chance - 0.5).abs() < 1e-9);
        assert!(b.question_only > 0.99 && b.template_prior > 0.99, "{b:?}");
        let f = &audit(&fair).families["f"];
        assert!(f.excess() < 0.1, "{f:?}");
    }

    #[test]
    fn filtering_brings_a_biased_family_within_the_margin() {
        // Three quarters of the trucks are far, three quarters of the cars near.
        let mut biased = Vec::new();
        for scene in 0..10 {
            for k in 0..40 {
                let truck = k % 2 == 0;
                let far = if truck { k % 8 != 0 } else { k % 8 == 1 };
                let stem = format!("How far is the {}?", if truck { "truck" } else { "car" });
                biased.push(row(
                    scene,
                    &format!("{stem} {k}"),
                    &["near", "far"],
                    u8::from(far),
                ));
            }
        }
        let before = audit(&biased).families["f"].clone();
        assert!(before.excess() > 0.15, "{before:?}");
        let (keep, removed) = filter(&biased, 0.05);
        let kept: Vec<QaRecord> = biased
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(r, _)| r.clone())
            .collect();
        let after = audit(&kept).families["f"].clone();
        assert!(
            after.excess() <= 0.05,
            "{after:?} after removing {}",
            removed.len()
        );
        assert_eq!(removed.len(), keep.iter().filter(|k| !**k).count());
        for r in &removed {
            assert!(
                r.reason.contains("without the image") || r.reason.contains("template"),
                "{r:?}"
            );
        }
        assert_eq!(filter(&biased, 0.05).0, keep, "deterministic");
    }
}
