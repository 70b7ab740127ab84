//! Blind baselines of a release: how well a model that never looks at an image answers it.
//!
//! Three baselines, each fitted on some scenes and scored on the others (folds by a hash of the
//! scene id, so no scene is in both), reported per family and per question type beside chance (the
//! mean of 1 / options). A single scene is split by its clips and keyframes instead (each kept
//! whole), and rows from a single clip or keyframe are not scored at all: no baseline is ever
//! scored on a row it was fitted on, since one that is rewards memorising the rows. They are fitted
//! per family on what a model reads, the prompt and its options, and never on the question type,
//! which a model does not see:
//!
//! - **letter prior**: always the letter most often correct in the fitting folds;
//! - **answer prior per template**: the answer most often correct for the question's template
//!   (its stem with numbers masked) among the options offered, falling back to the type;
//! - **question-only classifier**: multinomial naive Bayes over the words of the preamble and
//!   the stem (all a model reads before the options), choosing among the offered options' texts.
//!
//! A benchmark whose best blind baseline is well above chance measures the text, not vision.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::qa::QaRecord;

/// Folds at most (fewer when the release has fewer scenes, or a single scene fewer clips and
/// keyframes; never fewer than 2).
pub(crate) const MAX_FOLDS: usize = 5;

/// What the folds are drawn over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// Scenes: no scene is both fitted and scored.
    Scene,
    /// A single scene's clips, or for keyframe questions its keyframes (scene and frame): no
    /// clip or keyframe is both fitted and scored.
    Clip,
    /// Fewer than two clips or keyframes: nothing can be held out, so nothing is scored and
    /// the blind filter drops nothing on the baselines' word.
    #[default]
    None,
}

impl Grouping {
    fn describe(self) -> &'static str {
        match self {
            Grouping::Scene => "scenes",
            Grouping::Clip => "clips and keyframes of the single scene",
            Grouping::None => "nothing",
        }
    }
}

/// One group's accuracies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
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
    /// Folds the rows were split into (at least 2; 0 when they cannot be held out).
    pub folds: usize,
    /// What the folds are drawn over.
    pub grouping: Grouping,
    pub families: BTreeMap<String, Baselines>,
    /// Keyed `family/type`.
    pub types: BTreeMap<String, Baselines>,
}

mod fit;
mod rows;

use fit::Outcome;
use rows::Rows;

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

/// The audit of `records` (one split).
pub fn audit(records: &[QaRecord]) -> Audit {
    let mut c = Collector::for_audit();
    records.iter().for_each(|r| c.add(r));
    c.finish()
}

/// Rows for [`Collector::finish`] or [`Collector::filter`], added a record at a time: only a
/// few ids per row are kept (see `rows`), so the records themselves can be dropped as they
/// are read and memory follows the number of rows, not their text.
#[derive(Default)]
pub(crate) struct Collector {
    rows: Rows,
    /// Per scorable row, its position among the records added.
    index: Vec<usize>,
    added: usize,
}

impl Collector {
    /// A collector that is only [`Collector::finish`]ed: it keeps no `qa_id`s, which only the
    /// filter reads.
    pub fn for_audit() -> Self {
        let mut c = Collector::default();
        c.rows.no_ids = true;
        c
    }

    /// Adds the next record.
    pub fn add(&mut self, r: &QaRecord) {
        self.add_at(self.added, r);
    }

    /// Adds the record at `position` among the records (in any order; each position once).
    pub(crate) fn add_at(&mut self, position: usize, r: &QaRecord) {
        if self.rows.add(r) {
            self.index.push(position);
        }
        self.added = self.added.max(position + 1);
    }

    /// The rows in the records' order: the baselines' folds and the filter's choices do not
    /// depend on the order records were added in.
    fn in_order(mut self) -> Self {
        if !self.index.is_sorted() {
            let mut by: Vec<usize> = (0..self.index.len()).collect();
            by.sort_by_key(|&i| self.index[i]);
            self.rows.permute(&by);
            self.index = by.iter().map(|&i| self.index[i]).collect();
        }
        self
    }

    pub fn finish(self) -> Audit {
        let c = self.in_order();
        let rows = &c.rows;
        let all: Vec<usize> = (0..rows.rows.len()).collect();
        // Tallied by name id; each name's sums take its rows in the same order either way.
        let mut families: BTreeMap<u32, Tally> = BTreeMap::new();
        let mut types: BTreeMap<u32, Tally> = BTreeMap::new();
        let folds = fit::outcomes(rows, &all, |o| {
            let one = Tally {
                rows: 1,
                chance: o.chance,
                letter: usize::from(o.right[0]),
                template: usize::from(o.right[1]),
                text: usize::from(o.right[2]),
            };
            families.entry(o.family).or_default().add(&one);
            types.entry(o.key).or_default().add(&one);
        });
        let named = |by: BTreeMap<u32, Tally>| -> BTreeMap<String, Baselines> {
            by.into_iter()
                .map(|(id, t)| (rows.names.name(id).to_string(), t.baselines()))
                .collect()
        };
        Audit {
            folds: folds.folds,
            grouping: folds.grouping,
            families: named(families),
            types: named(types),
        }
    }
}

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

/// A Markdown table: one line per family, then per type.
pub(crate) fn table(a: &Audit) -> String {
    if a.grouping == Grouping::None {
        return "blind baselines: not measured, the rows come from a single clip or keyframe, so \
                no baseline can be scored on rows it was not fitted on\n"
            .into();
    }
    let mut s = format!(
        "blind baselines (fitted and scored on different {}, {} folds)\n\n\
         | group | rows | chance | letter prior | answer prior per template | question only | best − chance |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        a.grouping.describe(),
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

    /// A row of scene 0 on clip `clip` (a keyframe, frame `clip`, when `keyframe`).
    fn one_scene_row(
        clip: usize,
        keyframe: bool,
        stem: &str,
        choices: &[&str],
        answer: u8,
    ) -> QaRecord {
        let mut r = row(0, stem, choices, answer);
        r.qa_id = format!("{clip}-{}", r.qa_id);
        if keyframe {
            r.frame_idx = Some(clip as u32);
        } else {
            r.clip_id = Some(format!("clip-{clip}"));
        }
        r
    }

    /// `n` in letters: a word that numbers-masking templates keep apart.
    fn tag(mut n: usize) -> String {
        let mut s = String::new();
        loop {
            s.push(char::from(b'a' + (n % 26) as u8));
            n /= 26;
            if n == 0 {
                return s;
            }
        }
    }

    #[test]
    fn one_scene_is_held_out_by_clip_or_keyframe() {
        for keyframe in [false, true] {
            // Each clip's questions name the clip, and its answer is the clip's own: fitted on
            // the clip it scores, the question-only classifier would get them all; held out,
            // it has never seen the clip's words and answers no better than chance.
            let mut records = Vec::new();
            for clip in 0..12 {
                for k in 0..6 {
                    let stem = format!("In clip{clip} question {k}, how far is it?");
                    let ans = u8::from((clip * 7 + 3) % 5 < 2);
                    records.push(one_scene_row(clip, keyframe, &stem, &["near", "far"], ans));
                }
            }
            let mut c = Collector::default();
            records.iter().for_each(|r| c.add(r));
            let c = c.in_order();
            let all: Vec<usize> = (0..c.rows.rows.len()).collect();
            let mut outcomes = Vec::new();
            let folds = fit::outcomes(&c.rows, &all, |o| outcomes.push(o));
            assert_eq!(folds.grouping, Grouping::Clip, "keyframe {keyframe}");
            assert_eq!(folds.folds, MAX_FOLDS);
            // A clip's rows are all in one fold, and every fold scores some.
            let mut fold_of_unit: BTreeMap<u32, usize> = BTreeMap::new();
            for i in &all {
                let k = folds.of_row(&c.rows, *i);
                let unit = c.rows.rows[*i].unit;
                assert_eq!(*fold_of_unit.entry(unit).or_insert(k), k, "a clip split");
            }
            let used: std::collections::BTreeSet<usize> = fold_of_unit.values().copied().collect();
            assert_eq!(used.len(), MAX_FOLDS, "{fold_of_unit:?}");
            assert_eq!(outcomes.len(), records.len(), "every row scored once");
            let a = audit(&records);
            assert_eq!((a.folds, a.grouping), (MAX_FOLDS, Grouping::Clip));
            let b = &a.families["f"];
            assert!(b.question_only < 0.75, "fitted on what it scored: {b:?}");
        }
        // Two clips still make two folds, one clip each.
        let two: Vec<QaRecord> = (0..8)
            .map(|k| {
                one_scene_row(
                    k % 2,
                    false,
                    &format!("q {k}"),
                    &["a", "b"],
                    (k % 3 == 0) as u8,
                )
            })
            .collect();
        let a = audit(&two);
        assert_eq!((a.folds, a.grouping), (2, Grouping::Clip));
        assert_eq!(a.families["f"].rows, 8);
    }

    #[test]
    fn an_answer_in_the_question_is_caught_over_clips() {
        let mut records = Vec::new();
        for clip in 0..9 {
            for k in 0..10 {
                let answer = u8::from((clip + k) % 2 == 0);
                let said = ["near", "far"][usize::from(answer)];
                // A stem of its own (the template flattening keeps it), the answer in it.
                let stem = format!(
                    "The object {} is {said}. How far is it?",
                    tag(clip * 10 + k)
                );
                records.push(one_scene_row(
                    clip,
                    clip % 2 == 0,
                    &stem,
                    &["near", "far"],
                    answer,
                ));
            }
        }
        let a = audit(&records);
        assert_eq!((a.folds, a.grouping), (MAX_FOLDS, Grouping::Clip));
        let b = &a.families["f"];
        assert!(b.question_only > 0.95, "{b:?}");
        let (keep, removed) = filter(&records, 0.05);
        assert!(
            removed
                .iter()
                .any(|r| r.reason.contains("without the image")),
            "{removed:?}"
        );
        let kept: Vec<QaRecord> = records
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(r, _)| r.clone())
            .collect();
        assert!(audit(&kept)
            .families
            .get("f")
            .is_none_or(|b| b.excess() <= 0.05));
    }

    #[test]
    fn a_single_clip_cannot_be_held_out_and_the_filter_trusts_no_baseline() {
        // The answer is in the question: any baseline fitted on these rows would find it, but
        // none can be scored on rows it was not fitted on.
        let records: Vec<QaRecord> = (0..40)
            .map(|k| {
                let answer = u8::from(k % 2 == 0);
                let said = ["near", "far"][usize::from(answer)];
                let stem = format!("Object {k} is {said}{}. How far?", "!".repeat(k));
                one_scene_row(0, false, &stem, &["near", "far"], answer)
            })
            .collect();
        let a = audit(&records);
        assert_eq!((a.folds, a.grouping), (0, Grouping::None));
        assert!(a.families.is_empty() && a.types.is_empty(), "{a:?}");
        assert!(table(&a).contains("not measured"));
        let (keep, removed) = filter(&records, 0.05);
        assert!(removed.is_empty(), "{removed:?}");
        assert!(keep.iter().all(|k| *k));
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

    #[test]
    fn the_order_records_are_added_in_does_not_matter() {
        let mut records = Vec::new();
        for scene in 0..7 {
            for k in 0..30u8 {
                let noun = ["truck", "car", "bus"][usize::from(k % 3)];
                let stem = format!("How far is the {noun} {k}?");
                records.push(row(
                    scene,
                    &stem,
                    &["near", "far", "mid"],
                    (k / 3 + scene as u8) % 3,
                ));
            }
        }
        let mut c = Collector::default();
        for (i, r) in records.iter().enumerate().rev() {
            c.add_at(i, r);
        }
        let mut d = Collector::default();
        for (i, r) in records.iter().enumerate().rev() {
            d.add_at(i, r);
        }
        assert_eq!(c.finish(), audit(&records));
        assert_eq!(d.filter(0.02), filter(&records, 0.02));
    }
}
