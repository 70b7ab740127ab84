//! Balancing decided on compact facts about each row (its item, type, answer and id), so that
//! a table of millions of questions is balanced with tens of bytes per row in memory; the
//! question texts stay on disk until [`super::run`] writes the chosen rows out.
//!
//! The output order is canonical, (scene, item, family, type, id): the same rows give the same
//! table whether they came from one store or from the shards of a sharded build, and every
//! scene's rows are contiguous, so the writer needs only one scene's rows at a time.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::greedy::{self, Item, Selection};
use super::stats::Distribution;
use super::Options;
use crate::qa::compact::{Column, Lists, Names};
use crate::qa::{self, QaRecord};

/// Where a row is: (input file, record batch, row within the batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Loc {
    pub file: u32,
    pub batch: u32,
    pub row: u32,
}

#[derive(Debug)]
struct RowFacts {
    loc: Loc,
    scene: u32,
    item: u32,
    source: u32,
    family: u32,
    qtype: u32,
    /// `family/type`, the type key of Algorithm 1 and of the statistics.
    key: u32,
    answer: u32,
    letter: u32,
    n_choices: u8,
    /// Into `lists`: rows offering the same options share them.
    choices: u32,
}

/// What balancing needs to know about every row of the input.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    strings: Names,
    lists: Lists,
    rows: Vec<RowFacts>,
    /// Each row's `qa_id`, by row.
    qa_ids: Column,
}

impl Facts {
    /// Facts of rows held in memory; `Loc::row` is the index into `rows`.
    pub fn of(rows: &[QaRecord]) -> Self {
        let mut f = Facts::default();
        for (i, r) in rows.iter().enumerate() {
            f.push(
                r,
                Loc {
                    file: 0,
                    batch: 0,
                    row: i as u32,
                },
            );
        }
        f
    }

    pub fn push(&mut self, r: &QaRecord, loc: Loc) {
        let s = &mut self.strings;
        let row = RowFacts {
            loc,
            scene: s.id(&r.scene_id),
            item: s.id(&super::item_key(r)),
            source: s.id(&r.source),
            family: s.id(&r.family),
            qtype: s.id(&r.question_type),
            key: s.id(&format!("{}/{}", r.family, r.question_type)),
            answer: s.id(&r.answer),
            letter: s.id(&r.answer_letter),
            n_choices: r.choices.len().min(usize::from(u8::MAX)) as u8,
            choices: self.lists.id(r.choices.iter().map(|c| s.id(c)).collect()),
        };
        self.rows.push(row);
        self.qa_ids.push(&r.qa_id);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn loc(&self, row: usize) -> Loc {
        self.rows[row].loc
    }

    pub fn scene(&self, row: usize) -> &str {
        self.strings.name(self.rows[row].scene)
    }

    fn name(&self, i: u32) -> &str {
        self.strings.name(i)
    }

    fn qa_id(&self, row: usize) -> &str {
        self.qa_ids.get(row)
    }

    /// Orders positions into `order` by their rows' `qa_id`.
    fn by_id(&self, order: &[usize], a: usize, b: usize) -> Ordering {
        self.qa_id(order[a]).cmp(self.qa_id(order[b]))
    }

    /// Answer and letter counts of `rows`, with letters moved as `moves` say.
    pub(super) fn distribution(
        &self,
        rows: impl Iterator<Item = (usize, Option<u8>)>,
    ) -> Distribution {
        let mut d = Distribution::default();
        for (k, mv) in rows {
            let r = &self.rows[k];
            let letter = match mv {
                Some(to) => qa::letter(usize::from(to)).unwrap_or_default(),
                None => self.name(r.letter).to_string(),
            };
            d.add(
                self.name(r.family),
                self.name(r.key),
                self.name(r.answer),
                &letter,
            );
        }
        d
    }

    /// The items (sorted by id, Algorithm 1's tie-break order) and each item's rows; with
    /// `answers`, each item's answers per type, which only Algorithm 1 reads (a gathered table
    /// would hold a copy of every row's answer for nothing).
    fn items(&self, answers: bool) -> (Vec<Item>, Vec<Vec<usize>>) {
        let mut by: BTreeMap<&str, (Item, Vec<usize>)> = BTreeMap::new();
        for (k, r) in self.rows.iter().enumerate() {
            let id = self.name(r.item);
            let e = by.entry(id).or_insert_with(|| {
                (
                    Item {
                        id: id.to_string(),
                        source: self.name(r.source).to_string(),
                        answers: BTreeMap::new(),
                    },
                    Vec::new(),
                )
            });
            if answers {
                e.0.answers
                    .entry(self.name(r.key).to_string())
                    .or_default()
                    .push(self.name(r.answer).to_string());
            }
            e.1.push(k);
        }
        by.into_values().unzip()
    }

    /// The canonical order of two rows: [`canonical_key`]'s, read from the facts.
    fn canonical(&self, a: usize, b: usize) -> Ordering {
        let key = |k: usize| {
            let r = &self.rows[k];
            (
                self.name(r.scene),
                self.name(r.item),
                self.name(r.family),
                self.name(r.qtype),
                self.qa_id(k),
            )
        };
        key(a).cmp(&key(b))
    }
}

/// A record's place in the canonical order, (scene, item, family, type, id): what
/// [`Facts`] sorts by, for a step that sorts records it holds (gathering a scene's rows).
pub(crate) fn canonical_key(r: &QaRecord) -> (String, String, String, String, String) {
    (
        r.scene_id.clone(),
        super::item_key(r),
        r.family.clone(),
        r.question_type.clone(),
        r.qa_id.clone(),
    )
}

/// What to write: rows in output order, each with its new answer position, if it moves.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Indices into the facts' rows, in output order.
    pub order: Vec<usize>,
    /// Per entry of `order`: where letter balancing puts the correct option (None: stays).
    pub moves: Vec<Option<u8>>,
    pub selection: Selection,
    pub items_in: usize,
    pub before: Distribution,
    pub after: Distribution,
    /// With `prune_options`: per `family/type`, the options its rows may still offer.
    pub offered: Option<Offered>,
}

/// Decides what to keep: Algorithm 1 over the items, then the per-type caps and the answer
/// letters, when `opts` is given; every row otherwise (a table gathered as it is).
pub(crate) fn plan(facts: &Facts, opts: Option<&Options>) -> Plan {
    let (pool, members) = facts.items(opts.is_some());
    let selection = match opts {
        Some(o) => greedy::select(&pool, &o.spec),
        None => Selection {
            chosen: (0..pool.len()).collect(),
            fallbacks: 0,
            shortfall: 0,
        },
    };
    let mut order: Vec<usize> = selection
        .chosen
        .iter()
        .flat_map(|&i| members[i].iter().copied())
        .collect();
    order.sort_by(|&a, &b| facts.canonical(a, b));
    if let Some(cap) = opts.and_then(|o| o.type_cap) {
        let keep = first_by_id(
            facts,
            &order,
            |r| (r.family, r.qtype, 0),
            |rank, _| rank < cap,
        );
        order = order
            .into_iter()
            .zip(keep)
            .filter_map(|(k, keep)| keep.then_some(k))
            .collect();
    }
    let prune = opts.is_some_and(|o| o.prune_options);
    let mut offered = None;
    if prune {
        // First, so that a row that can offer only its answer does not set the rarest answer
        // the flattening keys on.
        (order, _) = prune_options(facts, &order);
    }
    if let Some(ratio) = opts.and_then(|o| o.answer_ratio) {
        order = flatten_answers(facts, &order, ratio);
    }
    if let Some(max) = opts.and_then(|o| o.max_rows) {
        order = quota(facts, &order, max);
    }
    if prune {
        let (o, set) = prune_options(facts, &order);
        order = o;
        offered = Some(set);
    }
    let moves = if opts.is_some_and(|o| o.balance_letters) {
        letter_moves(facts, &order, offered.as_ref())
    } else {
        vec![None; order.len()]
    };
    Plan {
        before: facts.distribution((0..facts.len()).map(|k| (k, None))),
        after: facts.distribution(order.iter().copied().zip(moves.iter().copied())),
        items_in: pool.len(),
        order,
        moves,
        selection,
        offered,
    }
}

/// Per `family/type` (an id into the facts' strings): the answers of its rows, the only
/// options its rows offer once pruned.
pub(crate) type Offered = BTreeMap<u32, BTreeSet<u32>>;

/// Takes out of every row the options no row of its (family, type) has as its answer: a model
/// that has seen some of the type's questions rules them out without looking, so they only
/// lift the blind baselines. A row left with fewer than two options is dropped, which can
/// retire another answer, so this repeats until nothing changes. Returns the kept rows (in
/// `order`'s order) and what each type offers.
pub(crate) fn prune_options(facts: &Facts, order: &[usize]) -> (Vec<usize>, Offered) {
    let mut order = order.to_vec();
    loop {
        let mut answered = Offered::new();
        for &k in &order {
            let r = &facts.rows[k];
            answered.entry(r.key).or_default().insert(r.answer);
        }
        let before = order.len();
        order.retain(|&k| offered_count(facts, k, Some(&answered)) >= 2);
        if order.len() == before {
            return (order, answered);
        }
    }
}

/// How many options row `k` offers once `offered` prunes it.
fn offered_count(facts: &Facts, k: usize, offered: Option<&Offered>) -> u8 {
    let r = &facts.rows[k];
    match offered.and_then(|o| o.get(&r.key)) {
        Some(set) => facts
            .lists
            .list(r.choices)
            .iter()
            .filter(|c| set.contains(c))
            .count() as u8,
        None => r.n_choices,
    }
}

/// Applies the pruning `offered` decided to a record read back: the options its type never
/// has as an answer go, with their notes, and the answer's position follows.
pub(crate) fn prune_record(facts: &Facts, offered: &Offered, r: &mut QaRecord) {
    let key = format!("{}/{}", r.family, r.question_type);
    let Some(set) = facts.strings.get(&key).and_then(|k| offered.get(&k)) else {
        return;
    };
    let keep = |c: &String| facts.strings.get(c).is_some_and(|id| set.contains(&id));
    let answer = r.choices.get(usize::from(r.answer_index)).cloned();
    r.choices.retain(keep);
    r.prompt.notes.retain(|c, _| keep(c));
    if let Some(i) = answer.and_then(|a| r.choices.iter().position(|c| *c == a)) {
        r.answer_index = i as u8;
        r.answer_letter = qa::letter(i).unwrap_or_default();
    }
}

/// Where each row's correct option goes by the rule of [`super::letters`], aligned with
/// `order`; None for rows with fewer than two options. With `offered`, rows count the options
/// they offer once pruned.
pub(crate) fn letter_moves(
    facts: &Facts,
    order: &[usize],
    offered: Option<&Offered>,
) -> Vec<Option<u8>> {
    super::letters::place(
        order,
        |k| {
            let r = &facts.rows[k];
            let n = offered_count(facts, k, offered);
            (facts.name(r.family), n, facts.name(r.qtype))
        },
        |k| facts.qa_id(k),
    )
}

/// Keeps, per (family, type), at most `ratio` × the rows of its rarest answer for each answer,
/// the first by `qa_id` (a hash, so the kept rows are an unbiased sample). The canonical order
/// is kept.
pub(crate) fn flatten_answers(facts: &Facts, order: &[usize], ratio: f64) -> Vec<usize> {
    let mut counts: BTreeMap<(u32, u32), BTreeMap<u32, usize>> = BTreeMap::new();
    for &k in order {
        let r = &facts.rows[k];
        *counts
            .entry((r.family, r.qtype))
            .or_default()
            .entry(r.answer)
            .or_default() += 1;
    }
    let caps: BTreeMap<(u32, u32), usize> = counts
        .iter()
        .map(|(g, by)| {
            let rarest = by.values().copied().min().unwrap_or(0);
            (*g, ((rarest as f64) * ratio).floor().max(1.0) as usize)
        })
        .collect();
    let mut by_answer: BTreeMap<(u32, u32, u32), Vec<usize>> = BTreeMap::new();
    for (pos, &k) in order.iter().enumerate() {
        let r = &facts.rows[k];
        by_answer
            .entry((r.family, r.qtype, r.answer))
            .or_default()
            .push(pos);
    }
    let mut kept = vec![false; order.len()];
    for ((f, t, _), mut positions) in by_answer {
        positions.sort_by(|&a, &b| facts.by_id(order, a, b));
        for pos in positions.into_iter().take(caps[&(f, t)]) {
            kept[pos] = true;
        }
    }
    order
        .iter()
        .zip(kept)
        .filter_map(|(&k, keep)| keep.then_some(k))
        .collect()
}

/// At most `max` rows, taken one at a time from each (type, answer) in turn (each group's rows
/// by `qa_id`), so a quota keeps every type and answer in proportion. The canonical order is
/// kept.
pub(crate) fn quota(facts: &Facts, order: &[usize], max: usize) -> Vec<usize> {
    if order.len() <= max {
        return order.to_vec();
    }
    let mut groups: BTreeMap<(u32, u32, u32), Vec<usize>> = BTreeMap::new();
    for (pos, &k) in order.iter().enumerate() {
        let r = &facts.rows[k];
        groups
            .entry((r.family, r.qtype, r.answer))
            .or_default()
            .push(pos);
    }
    let mut queues: Vec<std::collections::VecDeque<usize>> = groups
        .into_values()
        .map(|mut p| {
            p.sort_by(|&a, &b| facts.by_id(order, a, b));
            p.into()
        })
        .collect();
    let mut kept = vec![false; order.len()];
    let mut n = 0;
    while n < max && queues.iter().any(|q| !q.is_empty()) {
        for q in &mut queues {
            if n >= max {
                break;
            }
            if let Some(pos) = q.pop_front() {
                kept[pos] = true;
                n += 1;
            }
        }
    }
    order
        .iter()
        .zip(kept)
        .filter_map(|(&k, keep)| keep.then_some(k))
        .collect()
}

/// Ranks the rows of `order` by `qa_id` within their group and maps `(rank, row)` through `f`;
/// the results are aligned with `order`.
fn first_by_id<T>(
    facts: &Facts,
    order: &[usize],
    group: impl Fn(&RowFacts) -> (u32, u32, u8),
    f: impl Fn(usize, &RowFacts) -> T,
) -> Vec<T> {
    let mut by: BTreeMap<(u32, u32, u8), Vec<usize>> = BTreeMap::new();
    for (pos, &k) in order.iter().enumerate() {
        by.entry(group(&facts.rows[k])).or_default().push(pos);
    }
    let mut out: Vec<Option<T>> = (0..order.len()).map(|_| None).collect();
    for mut positions in by.into_values() {
        positions.sort_by(|&a, &b| facts.by_id(order, a, b));
        for (rank, pos) in positions.into_iter().enumerate() {
            out[pos] = Some(f(rank, &facts.rows[order[pos]]));
        }
    }
    out.into_iter().flatten().collect()
}

/// Puts the correct option of `r` at position `to` (the option there moves to where the
/// correct one was; options on a circle are rotated instead, and ordered options on a line
/// are left as they are) and rewrites the letter and the answer. The prompt follows by itself:
/// it is rendered from `choices` when the record is written.
pub fn move_answer(r: &mut QaRecord, to: usize) {
    let n = r.choices.len();
    if to >= n {
        return;
    }
    let from = usize::from(r.answer_index).min(n - 1);
    match qa::option_order(&r.family, &r.question_type) {
        qa::OptionOrder::Free => r.choices.swap(from, to),
        // Rotating keeps the circle's order.
        qa::OptionOrder::Circle => r.choices.rotate_left((from + n - to) % n),
        qa::OptionOrder::Arc | qa::OptionOrder::Line => return,
    }
    r.answer_index = to as u8;
    r.answer_letter = qa::letter(to).unwrap_or_default();
    r.answer = r.choices[to].clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The release keeps only [`Letters`] of each row; the letters it places must be the ones
    /// balancing places from its full facts.
    #[test]
    fn the_release_places_the_letters_balancing_would() {
        let mut rows = Vec::new();
        let mut rng = crate::synth::tokens::Rng::new(7, "letters");
        for i in 0..600 {
            let family = *rng.pick(&["metavqa", "egodyn", "sig"]);
            let n = 1 + rng.below(5);
            let choices: Vec<String> = (0..n).map(|c| format!("option {c}")).collect();
            rows.push(QaRecord {
                qa_id: format!("{family}-{:016x}", rng.next_u64()),
                scene_id: format!("scene-{}", i % 7),
                family: family.into(),
                question_type: format!("type{}", rng.below(4)),
                answer: choices[0].clone(),
                answer_letter: "A".into(),
                choices,
                ..Default::default()
            });
        }
        let facts = Facts::of(&rows);
        let order: Vec<usize> = (0..rows.len()).collect();
        let mut letters = super::super::letters::Letters::default();
        rows.iter().for_each(|r| letters.push(r));
        let moves = letters.finish().expect("ids are unique");
        // The release reads each family's rows in table order.
        let mut seen = BTreeMap::<&str, usize>::new();
        let got: Vec<Option<u8>> = rows
            .iter()
            .map(|r| {
                let k = seen.entry(r.family.as_str()).or_default();
                *k += 1;
                moves.get(&r.family, *k - 1)
            })
            .collect();
        let want = letter_moves(&facts, &order, None);
        assert_eq!(got, want);
        assert!(want.iter().filter(|m| m.is_some()).count() > 300);
    }
}
