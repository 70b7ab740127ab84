//! The three baselines fitted on some folds of a family's rows and scored on the held-out fold.

use std::collections::{BTreeMap, BTreeSet};

use super::rows::{Row, Rows};
use super::Grouping;

/// Per family, what the fitting folds say. Keys are ids into the rows' names.
#[derive(Default)]
struct Fit {
    letters: BTreeMap<u8, usize>,
    by_template: BTreeMap<u32, BTreeMap<u32, usize>>,
    answers: BTreeMap<u32, usize>,
    /// Naive Bayes: per answer, word counts and their total.
    word_counts: BTreeMap<u32, BTreeMap<u32, usize>>,
    word_totals: BTreeMap<u32, usize>,
    vocabulary: BTreeSet<u32>,
    rows: usize,
}

impl Fit {
    fn add(&mut self, rows: &Rows, r: &Row) {
        let a = rows.answer_text(r);
        *self.letters.entry(r.answer).or_default() += 1;
        *self
            .by_template
            .entry(r.template)
            .or_default()
            .entry(a)
            .or_default() += 1;
        *self.answers.entry(a).or_default() += 1;
        let wc = self.word_counts.entry(a).or_default();
        for &w in rows.words(r) {
            *wc.entry(w).or_default() += 1;
            self.vocabulary.insert(w);
        }
        *self.word_totals.entry(a).or_default() += rows.n_words(r);
        self.rows += 1;
    }

    /// Whether the letter prior, the template prior and the question-only classifier get
    /// `r` right.
    fn right(&self, rows: &Rows, r: &Row) -> [bool; 3] {
        [
            self.letter() == Some(r.answer),
            self.template_guess(rows, r) == r.answer,
            self.text_guess(rows, r) == r.answer,
        ]
    }

    fn letter(&self) -> Option<u8> {
        // Most frequent, the lowest letter on a tie.
        self.letters
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(l, _)| *l)
    }

    /// The offered option scoring highest under `score`; the first option on a tie.
    fn pick(options: &[u32], score: impl Fn(u32) -> f64) -> u8 {
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (i, &o) in options.iter().enumerate() {
            let s = score(o);
            if s > best_score {
                best = i;
                best_score = s;
            }
        }
        best as u8
    }

    fn template_guess(&self, rows: &Rows, r: &Row) -> u8 {
        let counts = self.by_template.get(&r.template);
        Self::pick(rows.options(r), |o| {
            let t = counts.and_then(|c| c.get(&o)).copied().unwrap_or(0);
            let a = self.answers.get(&o).copied().unwrap_or(0);
            // The template's own counts first; the type's break ties.
            t as f64 * 1e6 + a as f64
        })
    }

    fn text_guess(&self, rows: &Rows, r: &Row) -> u8 {
        let v = self.vocabulary.len().max(1) as f64;
        let n = self.rows.max(1) as f64;
        let classes = self.answers.len().max(1) as f64;
        Self::pick(rows.options(r), |o| {
            let prior = (self.answers.get(&o).copied().unwrap_or(0) as f64 + 1.0) / (n + classes);
            let wc = self.word_counts.get(&o);
            let total = self.word_totals.get(&o).copied().unwrap_or(0) as f64;
            let mut s = prior.ln();
            for w in rows.words(r) {
                let c = wc.and_then(|m| m.get(w)).copied().unwrap_or(0) as f64;
                s += ((c + 1.0) / (total + v)).ln();
            }
            s
        })
    }
}

/// A scorable row's held-out outcome: its position in the rows, its family and type key (ids),
/// chance, and whether the letter prior, the template prior and the question-only classifier
/// got it right.
pub(super) struct Outcome {
    pub row: usize,
    pub family: u32,
    pub key: u32,
    pub chance: f64,
    pub right: [bool; 3],
}

/// The leading 8 bytes of the SHA-256 of `name`: a fold assignment that depends on the name
/// alone, never on RNG state or the order rows were read in.
pub(super) fn hash_of(name: &str) -> u64 {
    use sha2::Digest;
    let h = sha2::Sha256::digest(name.as_bytes());
    u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
}

/// How the rows `which` are split into folds, and which fold each grouping unit is in.
pub(super) struct Folds {
    pub folds: usize,
    pub grouping: Grouping,
    /// Per unit (a scene id, or a clip/keyframe id), its fold.
    fold: BTreeMap<u32, usize>,
}

impl Folds {
    /// Scenes when there are at least two, so that no scene is both fitted and scored (by a
    /// hash of the scene id). A single scene is split by its clips and keyframes instead,
    /// each kept whole (a clip's or a keyframe's questions share their objects and stems, so
    /// a baseline scored on one of them must not have been fitted on its neighbours); those
    /// units are ranked by their hash and dealt round the folds, so that every fold gets one
    /// even when there are only two. Fewer than two units cannot be held out at all.
    pub(super) fn of(rows: &Rows, which: &[usize]) -> Self {
        let scenes: BTreeSet<u32> = which.iter().map(|&i| rows.rows[i].scene).collect();
        if scenes.len() >= 2 {
            let folds = scenes.len().min(super::MAX_FOLDS);
            let fold = scenes
                .iter()
                .map(|&s| (s, (hash_of(rows.names.name(s)) % folds as u64) as usize))
                .collect();
            return Folds {
                folds,
                grouping: Grouping::Scene,
                fold,
            };
        }
        let units: BTreeSet<u32> = which.iter().map(|&i| rows.rows[i].unit).collect();
        if units.len() < 2 {
            return Folds {
                folds: 0,
                grouping: Grouping::None,
                fold: BTreeMap::new(),
            };
        }
        let folds = units.len().min(super::MAX_FOLDS);
        let mut ranked: Vec<(u64, &str, u32)> = units
            .iter()
            .map(|&u| {
                let name = rows.names.name(u);
                (hash_of(name), name, u)
            })
            .collect();
        ranked.sort_unstable();
        let fold = ranked
            .iter()
            .enumerate()
            .map(|(rank, &(_, _, u))| (u, rank % folds))
            .collect();
        Folds {
            folds,
            grouping: Grouping::Clip,
            fold,
        }
    }

    /// Row `i`'s fold.
    pub(super) fn of_row(&self, rows: &Rows, i: usize) -> usize {
        let r = &rows.rows[i];
        let unit = match self.grouping {
            Grouping::Scene => r.scene,
            _ => r.unit,
        };
        self.fold[&unit]
    }
}

/// The held-out outcomes of the rows `which` of `rows`, handed to `visit` one at a time (a
/// tally need not hold them): families in name order, then folds, then rows in their order,
/// each scored by baselines fitted on the other folds only. Returns the folds; when the rows
/// cannot be held out ([`Grouping::None`]) there are no outcomes.
pub(super) fn outcomes(rows: &Rows, which: &[usize], mut visit: impl FnMut(Outcome)) -> Folds {
    let folds = Folds::of(rows, which);
    if folds.grouping == Grouping::None {
        return folds;
    }
    // Row indices as u32: four bytes a row fewer while the folds are fitted.
    let mut by_family: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for &i in which {
        let f = rows.rows[i].family;
        by_family
            .entry(rows.names.name(f))
            .or_default()
            .push(i as u32);
    }
    let fold_of_row = |i: u32| folds.of_row(rows, i as usize);
    for group in by_family.values() {
        for k in 0..folds.folds {
            let mut fit = Fit::default();
            for &i in group.iter().filter(|&&i| fold_of_row(i) != k) {
                fit.add(rows, &rows.rows[i as usize]);
            }
            for &i in group.iter().filter(|&&i| fold_of_row(i) == k) {
                let r = &rows.rows[i as usize];
                visit(Outcome {
                    row: i as usize,
                    family: r.family,
                    key: r.key,
                    chance: 1.0 / rows.options(r).len() as f64,
                    right: fit.right(rows, r),
                });
            }
        }
    }
    folds
}
