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

/// Rows the audit of a release scores at most, all families together: past it, the families
/// with the most rows are sampled down to one level (those under it are kept whole), each to
/// its rows with the smallest hashes of their `qa_id` (a uniform sample that does not depend on
/// the order rows are read in), so that the audit's memory is the same at 50 scenes and at
/// 2,000. The level never falls below [`MIN_AUDITED_ROWS`].
pub(crate) const AUDITED_ROWS: usize = 1 << 17;

/// Rows of a family the audit keeps at least when its families share [`AUDITED_ROWS`]: a
/// held-out accuracy near chance then has a standard error under 0.004, a twelfth of the
/// default blind margin.
pub(crate) const MIN_AUDITED_ROWS: usize = 1 << 14;

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
    /// The families audited on a sample ([`AUDITED_ROWS`]); absent when every row was.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sampled: BTreeMap<String, Sample>,
}

/// How much of a family's scorable rows the audit read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Sample {
    /// Rows kept: the ones with the smallest hashes of their `qa_id`.
    pub rows: usize,
    /// Scorable rows the family has.
    pub of: usize,
}

mod filter;
mod fit;
mod rows;

#[cfg(test)]
pub(crate) use filter::filter;

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
    /// Rows kept at most, all families together (0: all of them; the filter must see every
    /// row), and a family's share never below `floor`.
    budget: usize,
    floor: usize,
    /// Per kept row, the hash of its `qa_id` (only when sampling).
    keys: Vec<u64>,
    /// Rows kept, all families together.
    kept: usize,
    /// Per family, its scorable rows seen, rows kept and the largest hash still kept.
    seen: BTreeMap<String, Seen>,
}

/// A capped collector's count of one family.
struct Seen {
    rows: usize,
    kept: usize,
    /// Rows hashing above this are past the family's sample already.
    threshold: u64,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            rows: 0,
            kept: 0,
            threshold: u64::MAX,
        }
    }
}

impl Collector {
    /// A collector that is only [`Collector::finish`]ed: it keeps no `qa_id`s, which only the
    /// filter reads, and samples the largest families past [`AUDITED_ROWS`].
    pub fn for_audit() -> Self {
        Self::sampling(AUDITED_ROWS, MIN_AUDITED_ROWS)
    }

    /// [`Collector::for_audit`] keeping `budget` rows in all, and never fewer than `floor` of a
    /// family that has them.
    fn sampling(budget: usize, floor: usize) -> Self {
        let mut c = Collector {
            budget: budget.max(1),
            floor: floor.max(1),
            ..Default::default()
        };
        c.rows.no_ids = true;
        c
    }

    /// Adds the next record.
    pub fn add(&mut self, r: &QaRecord) {
        self.add_at(self.added, r);
    }

    /// Adds the record at `position` among the records (in any order; each position once).
    pub(crate) fn add_at(&mut self, position: usize, r: &QaRecord) {
        self.added = self.added.max(position + 1);
        if self.budget == 0 {
            if self.rows.add(r) {
                rows::push(&mut self.index, position);
            }
            return;
        }
        if !rows::scorable(r) {
            return;
        }
        let key = fit::hash_of(&r.qa_id);
        let seen = self.seen.entry(r.family.clone()).or_default();
        seen.rows += 1;
        if key > seen.threshold {
            return;
        }
        seen.kept += 1;
        self.kept += 1;
        self.rows.add(r);
        rows::push(&mut self.index, position);
        rows::push(&mut self.keys, key);
        // The budget with every family at its floor, so a cut always brings the rows under it.
        let most = self.budget.max(self.seen.len() * self.floor);
        if self.kept >= most + most / 4 {
            if let Some(level) = self.level() {
                self.cut_back(level);
            }
        }
    }

    /// The level the families are sampled down to: the largest at which the rows seen, each
    /// family counted up to it, fit the budget (never under the floor); None when they all fit.
    fn level(&self) -> Option<usize> {
        level(self.seen.values().map(|s| s.rows), self.budget, self.floor)
    }

    /// Drops each family's rows past its `level` smallest (hash, then position), lowering its
    /// threshold to the last one kept. Run when the rows kept are a quarter more than the
    /// budget, which happens about once each time they grow by a quarter, so the rebuild of
    /// the names costs little.
    fn cut_back(&mut self, level: usize) {
        let mut ranked: Vec<(u32, u64, usize, usize)> = (self.rows.rows.iter().enumerate())
            .map(|(i, r)| (r.family, self.keys[i], self.index[i], i))
            .collect();
        ranked.sort_unstable();
        let mut keep = vec![true; ranked.len()];
        let mut cut: Vec<(String, u64)> = Vec::new();
        for group in ranked.chunk_by(|a, b| a.0 == b.0) {
            if group.len() <= level {
                continue;
            }
            for &(_, _, _, i) in &group[level..] {
                keep[i] = false;
            }
            let name = self.rows.names.name(group[0].0).to_string();
            cut.push((name, group[level - 1].1));
        }
        if cut.is_empty() {
            return;
        }
        self.rows.retain(&keep);
        rows::retain(&mut self.index, &keep);
        rows::retain(&mut self.keys, &keep);
        for (name, threshold) in cut {
            if let Some(seen) = self.seen.get_mut(&name) {
                seen.kept = level;
                seen.threshold = threshold;
            }
        }
        self.kept = self.seen.values().map(|s| s.kept).sum();
    }

    /// Cuts every family to its sample; returns the families that were sampled.
    fn sample(&mut self) -> BTreeMap<String, Sample> {
        let Some(level) = self.level() else {
            return BTreeMap::new();
        };
        self.cut_back(level);
        self.seen
            .iter()
            .filter(|(_, s)| s.rows > level)
            .map(|(f, s)| {
                let sample = Sample {
                    rows: level,
                    of: s.rows,
                };
                (f.clone(), sample)
            })
            .collect()
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

    pub fn finish(mut self) -> Audit {
        let sampled = self.sample();
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
            sampled,
        }
    }
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
    if let Some(note) = sampled_note(&a.sampled) {
        s.push('\n');
        s.push_str(&note);
    }
    s
}

/// The line that says which families were audited on a sample (the CLI's table and the card
/// both print it); None when none was.
pub(crate) fn sampled_note(sampled: &BTreeMap<String, Sample>) -> Option<String> {
    if sampled.is_empty() {
        return None;
    }
    let parts: Vec<String> = sampled
        .iter()
        .map(|(f, n)| format!("{f} {} of {} rows", n.rows, n.of))
        .collect();
    Some(format!(
        "Audited on a sample (the rows with the smallest hashes of their `qa_id`; at most {} \
         rows in all, the largest families sampled to one level, never under {} a family): {}.\n",
        AUDITED_ROWS,
        MIN_AUDITED_ROWS,
        parts.join(", ")
    ))
}

/// The largest level at which `counts`, each counted up to it, sum to at most `budget`, and
/// never under `floor`; None when they sum to at most `budget` whole.
fn level(counts: impl Iterator<Item = usize>, budget: usize, floor: usize) -> Option<usize> {
    let mut counts: Vec<usize> = counts.collect();
    counts.sort_unstable();
    let mut left = budget;
    for (i, &n) in counts.iter().enumerate() {
        // Every family from here on has at least n rows: they share what is left equally
        // unless each of them fits in it whole.
        let families = counts.len() - i;
        if n.saturating_mul(families) > left {
            return Some((left / families).max(floor));
        }
        left -= n;
    }
    None
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
    fn the_largest_families_are_audited_on_their_smallest_hashes() {
        let mut records = Vec::new();
        for scene in 0..9 {
            for k in 0..70u8 {
                let noun = ["truck", "car", "bus"][usize::from(k % 3)];
                let mut r = row(
                    scene,
                    &format!("How far is the {noun} {}?", tag(usize::from(k))),
                    &["near", "far", "mid"],
                    (k / 3 + scene as u8) % 3,
                );
                if k % 7 == 0 {
                    r.family = "g".into();
                }
                records.push(r);
            }
        }
        let n = |f: &str| records.iter().filter(|r| r.family == f).count();
        assert_eq!((n("f"), n("g")), (540, 90));
        // (budget, floor, rows of f and of g expected, worked out by hand): g's 90 rows fit
        // whole beside f at 200 − 90 = 110; at 100 both are cut to 50; the floor of 40 wins
        // over an equal share of 60 / 2 = 30.
        for (budget, floor, want_f, want_g) in
            [(200, 10, 110, 90), (100, 10, 50, 50), (60, 40, 40, 40)]
        {
            // The sample chosen independently: per family, the rows whose SHA-256 of the
            // `qa_id` reads smallest as a little-endian u64.
            let key = |r: &QaRecord| {
                use sha2::Digest;
                let h = sha2::Sha256::digest(r.qa_id.as_bytes());
                u64::from_le_bytes(h[..8].try_into().unwrap())
            };
            let mut chosen: Vec<(u64, usize)> = Vec::new();
            for (family, take) in [("f", want_f), ("g", want_g)] {
                let mut ranked: Vec<(u64, usize)> = records
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.family == family)
                    .map(|(i, r)| (key(r), i))
                    .collect();
                ranked.sort_unstable();
                chosen.extend(ranked.into_iter().take(take));
            }
            chosen.sort_by_key(|&(_, i)| i);
            let subset: Vec<QaRecord> = chosen.iter().map(|&(_, i)| records[i].clone()).collect();
            let expected = audit(&subset);
            assert!(expected.sampled.is_empty());
            // Added backwards, so the families' thresholds fall while rows still arrive.
            let mut c = Collector::sampling(budget, floor);
            for (i, r) in records.iter().enumerate().rev() {
                c.add_at(i, r);
            }
            let got = c.finish();
            assert_eq!(got.families, expected.families, "budget {budget}");
            assert_eq!(got.types, expected.types);
            assert_eq!(
                (got.folds, got.grouping),
                (expected.folds, expected.grouping)
            );
            let mut sampled = BTreeMap::from([(
                "f".to_string(),
                Sample {
                    rows: want_f,
                    of: n("f"),
                },
            )]);
            if want_g < n("g") {
                sampled.insert(
                    "g".to_string(),
                    Sample {
                        rows: want_g,
                        of: n("g"),
                    },
                );
            }
            assert_eq!(got.sampled, sampled, "budget {budget}");
            assert!(table(&got).contains(&format!("f {want_f} of {} rows", n("f"))));
        }
        // Under the budget nothing is sampled.
        let mut c = Collector::sampling(records.len(), 1);
        records.iter().for_each(|r| c.add(r));
        let all = c.finish();
        assert!(all.sampled.is_empty());
        assert_eq!(all, audit(&records));
    }

    #[test]
    fn the_level_shares_what_the_small_families_leave() {
        let level = |c: &[usize], budget, floor| level(c.iter().copied(), budget, floor);
        assert_eq!(level(&[10, 20], 30, 1), None);
        assert_eq!(level(&[10, 20, 5], 30, 1), Some(15));
        assert_eq!(level(&[100, 100, 100], 90, 1), Some(30));
        assert_eq!(level(&[100, 100, 100], 90, 50), Some(50));
        assert_eq!(level(&[1, 2, 1000, 3000], 1003, 1), Some(500));
        assert_eq!(level(&[], 10, 1), None);
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
