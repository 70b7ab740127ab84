//! EgoDyn's Algorithm 1: greedy multi-objective class balancing with source caps.
//!
//! The pool is a list of [`Item`]s (a clip or a frame) carrying answers to several question
//! types. Each step picks the (type, class) pair furthest below its target share, restricts the
//! candidates to unselected items with that answer whose source is under its cap (falling back
//! to every unselected item under its cap when none has it), and takes the candidate that helps
//! the other types most. Two ways of choosing the pair exist (see [`Mode`]).
//!
//! Everything is ordered: types by name, classes by name, items by id; ties go to the first.
//! No hash order, no subsampling, so the same pool always gives the same selection.

use std::collections::BTreeMap;

use rayon::prelude::*;

/// How the deficient (type, class) pair is chosen each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The paper's Algorithm 1: the joint argmax over (type, class) of `target − share`.
    #[default]
    Paper,
    /// What the released code did (`docs/egodyn.md` §5.2): the type whose largest |share − target|
    /// is largest (the first type before anything is selected), then its most under-represented
    /// class.
    Released,
}

/// One selectable unit with its answers (`answers[type]` lists the item's answers of that
/// type; usually one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub id: String,
    pub source: String,
    pub answers: BTreeMap<String, Vec<String>>,
}

/// What to select.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BalanceSpec {
    /// Items to select (the selection stops earlier when the pool or the caps run out).
    pub target: usize,
    /// Maximum items per source; sources not listed are uncapped.
    pub source_caps: BTreeMap<String, usize>,
    /// Target share per type and class; types not listed get a uniform share over the
    /// classes observed in the pool. Listed shares are used as given (they should sum to 1).
    pub targets: BTreeMap<String, BTreeMap<String, f64>>,
    pub mode: Mode,
}

/// The outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Indices into the pool, in selection order.
    pub chosen: Vec<usize>,
    /// Steps that found no item with the wanted answer and took the fallback.
    pub fallbacks: usize,
    /// `target − chosen.len()` when the pool or the caps ran out.
    pub shortfall: usize,
}

/// The classes (answers) of every type observed in `pool`, sorted.
pub(crate) fn classes(pool: &[Item]) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for it in pool {
        for (q, answers) in &it.answers {
            m.entry(q.clone())
                .or_default()
                .extend(answers.iter().cloned());
        }
    }
    m.into_iter()
        .map(|(q, s)| (q, s.into_iter().collect()))
        .collect()
}

/// Dense per-item class indices, so the inner loop does no string work.
struct Dense {
    /// Per type: its classes.
    classes: Vec<Vec<String>>,
    /// Per type and class: the target share.
    target: Vec<Vec<f64>>,
    /// Per item: `(type, class)` pairs.
    answers: Vec<Vec<(usize, usize)>>,
    /// Per item: source index.
    source: Vec<usize>,
    /// Per source: cap.
    cap: Vec<usize>,
}

fn densify(pool: &[Item], spec: &BalanceSpec) -> Dense {
    let cls = classes(pool);
    let types: Vec<&String> = cls.keys().collect();
    let type_ix: BTreeMap<&str, usize> = types
        .iter()
        .enumerate()
        .map(|(i, q)| (q.as_str(), i))
        .collect();
    let target = cls
        .iter()
        .map(|(q, cs)| match spec.targets.get(q) {
            Some(t) => cs
                .iter()
                .map(|c| t.get(c).copied().unwrap_or(0.0))
                .collect(),
            None => vec![1.0 / cs.len().max(1) as f64; cs.len()],
        })
        .collect();
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    for it in pool {
        let n = sources.len();
        sources.entry(it.source.as_str()).or_insert(n);
    }
    let mut cap = vec![usize::MAX; sources.len()];
    for (s, &i) in &sources {
        if let Some(&c) = spec.source_caps.get(*s) {
            cap[i] = c;
        }
    }
    let answers = pool
        .iter()
        .map(|it| {
            it.answers
                .iter()
                .flat_map(|(q, a)| {
                    let qi = type_ix[q.as_str()];
                    let cs = &cls[q];
                    a.iter()
                        .filter_map(move |c| cs.binary_search(c).ok().map(|ci| (qi, ci)))
                })
                .collect()
        })
        .collect();
    Dense {
        classes: cls.into_values().collect(),
        target,
        answers,
        source: pool.iter().map(|it| sources[it.source.as_str()]).collect(),
        cap,
    }
}

/// Runs the greedy selection. Items are considered in id order (ties go to the smaller id).
pub fn select(pool: &[Item], spec: &BalanceSpec) -> Selection {
    let d = densify(pool, spec);
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| pool[a].id.cmp(&pool[b].id).then(a.cmp(&b)));
    let nq = d.classes.len();
    let mut count: Vec<Vec<u64>> = d.classes.iter().map(|c| vec![0; c.len()]).collect();
    let mut per_type = vec![0u64; nq];
    let mut per_source = vec![0usize; d.cap.len()];
    let mut taken = vec![false; pool.len()];
    let mut chosen = Vec::new();
    let mut fallbacks = 0;
    while chosen.len() < spec.target {
        // deficit[q][c] = target − share; share = count / max(answers of q so far, 1).
        let deficit: Vec<Vec<f64>> = (0..nq)
            .map(|q| {
                let n = per_type[q].max(1) as f64;
                d.target[q]
                    .iter()
                    .zip(&count[q])
                    .map(|(t, &c)| t - c as f64 / n)
                    .collect()
            })
            .collect();
        let want = match spec.mode {
            Mode::Paper => argmax_pair(&deficit),
            Mode::Released => released_pair(&deficit, chosen.is_empty()),
        };
        let open = |i: usize| !taken[i] && per_source[d.source[i]] < d.cap[d.source[i]];
        let has = |i: usize| want.is_some_and(|w| d.answers[i].contains(&w));
        let mut cands: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| open(i) && has(i))
            .collect();
        if cands.is_empty() {
            cands = order.iter().copied().filter(|&i| open(i)).collect();
            if cands.is_empty() {
                break;
            }
            fallbacks += 1;
        }
        let skip = want.map(|w| w.0);
        // Helpfulness: the positive deficits an item's other answers would fill.
        let score = |i: usize| -> f64 {
            d.answers[i]
                .iter()
                .filter(|(q, _)| Some(*q) != skip)
                .map(|&(q, c)| deficit[q][c].max(0.0))
                .sum()
        };
        let scores: Vec<f64> = cands.par_iter().map(|&i| score(i)).collect();
        let mut best = 0;
        for (k, s) in scores.iter().enumerate() {
            if *s > scores[best] {
                best = k;
            }
        }
        let pick = cands[best];
        taken[pick] = true;
        per_source[d.source[pick]] += 1;
        for &(q, c) in &d.answers[pick] {
            count[q][c] += 1;
            per_type[q] += 1;
        }
        chosen.push(pick);
    }
    Selection {
        shortfall: spec.target.saturating_sub(chosen.len()),
        chosen,
        fallbacks,
    }
}

/// The (type, class) with the largest `target − share`; the first in order on ties.
fn argmax_pair(deficit: &[Vec<f64>]) -> Option<(usize, usize)> {
    let mut best: Option<((usize, usize), f64)> = None;
    for (q, row) in deficit.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if best.is_none_or(|(_, b)| v > b) {
                best = Some(((q, c), v));
            }
        }
    }
    best.map(|(p, _)| p)
}

/// The released code's choice: the type with the largest maximum |deviation| (the first type
/// before anything is selected), then its class with the largest deficit.
fn released_pair(deficit: &[Vec<f64>], first_step: bool) -> Option<(usize, usize)> {
    let q = if first_step {
        (!deficit.is_empty()).then_some(0)?
    } else {
        let mut best: Option<(usize, f64)> = None;
        for (q, row) in deficit.iter().enumerate() {
            let dev = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if best.is_none_or(|(_, b)| dev > b) {
                best = Some((q, dev));
            }
        }
        best?.0
    };
    let row = &deficit[q];
    let mut c = 0;
    for (k, &v) in row.iter().enumerate() {
        if v > row[c] {
            c = k;
        }
    }
    (!row.is_empty()).then_some((q, c))
}
