//! Class balancing of question tables: EgoDyn's greedy Algorithm 1 over items (clips or
//! frames) with source caps ([`greedy`]), per-type caps (STSBench-style), answer-letter
//! balancing for MCQs, and the before/after statistics a release report shows ([`stats`]).
//!
//! `drivegen balance` reads QA tables (the common record of `schemas/qa.json`), groups rows
//! into items (`clip_id` when set, else `scene_id` + `frame_idx`), selects items, keeps their
//! rows in a canonical order (scene, item, family, type, id), and writes `balanced_qa.arrow`,
//! `balance_report.md` and `balance_report.json`. The output is a pure function of the input
//! rows and the options; deciding needs only compact facts per row ([`plan`]).

pub mod greedy;
pub(crate) mod letters;
pub mod plan;
pub(crate) mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use self::greedy::{BalanceSpec, Selection};
use self::plan::{Facts, Loc, Plan};
use self::stats::Distribution;
use crate::qa::ipc::{QaFile, QaWriter};
use crate::qa::{self, QaRecord};
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// Options of a balancing run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The QA tables to balance together.
    pub inputs: Vec<PathBuf>,
    /// The folder that gets `balanced_qa.arrow` and its report.
    pub out: PathBuf,
    pub spec: BalanceSpec,
    /// Keep at most this many rows per (family, question type), the first by `qa_id`.
    pub type_cap: Option<usize>,
    /// Re-place each question's correct option so that answer letters are uniform within
    /// every (family, question type).
    pub balance_letters: bool,
    /// No answer of a (family, type) keeps more than this many times the rows of its rarest
    /// answer ([`plan::flatten_answers`]).
    pub answer_ratio: Option<f64>,
    /// Take out of every row the options that no row of its (family, type) has as its answer,
    /// dropping rows left with one option ([`plan::prune_options`]).
    pub prune_options: bool,
    /// At most this many rows in all, taken round-robin over (type, answer).
    pub max_rows: Option<usize>,
    /// Drop rows blind baselines answer from the text alone until the family's best blind
    /// baseline is within this margin of chance ([`crate::audit::Collector::filter`]).
    pub max_blind_excess: Option<f64>,
}

/// The item a QA row belongs to.
pub(crate) fn item_key(r: &QaRecord) -> String {
    match (&r.clip_id, r.frame_idx) {
        (Some(c), _) => c.clone(),
        (None, Some(f)) => format!("{}#{f:06}", r.scene_id),
        (None, None) => format!("{}#{}", r.scene_id, r.qa_id),
    }
}

/// What a balancing run did.
#[derive(Debug, Clone)]
pub struct BalanceOutcome {
    /// Rows written.
    pub rows: usize,
    pub selection: Selection,
    pub items_in: usize,
    pub before: Distribution,
    pub after: Distribution,
}

impl BalanceOutcome {
    fn of(plan: Plan) -> Self {
        Self {
            rows: plan.order.len(),
            selection: plan.selection,
            items_in: plan.items_in,
            before: plan.before,
            after: plan.after,
        }
    }
}

/// Balances rows held in memory; returns the kept rows in the canonical order.
pub fn balance_rows(rows: &[QaRecord], opts: &Options) -> (Vec<QaRecord>, BalanceOutcome) {
    let facts = Facts::of(rows);
    let plan = plan::plan(&facts, Some(opts));
    let out = plan
        .order
        .iter()
        .zip(&plan.moves)
        .map(|(&k, mv)| {
            let mut r = rows[k].clone();
            if let Some(o) = &plan.offered {
                plan::prune_record(&facts, o, &mut r);
            }
            if let Some(to) = mv {
                plan::move_answer(&mut r, usize::from(*to));
            }
            r
        })
        .collect();
    (out, BalanceOutcome::of(plan))
}

/// Makes the answer letters uniform within every (family, type, number of options); see
/// [`plan::letter_moves`].
pub fn balance_letters(rows: &mut [QaRecord]) {
    let facts = Facts::of(rows);
    let order: Vec<usize> = (0..rows.len()).collect();
    for (k, mv) in plan::letter_moves(&facts, &order, None)
        .into_iter()
        .enumerate()
    {
        if let Some(to) = mv {
            plan::move_answer(&mut rows[k], usize::from(to));
        }
    }
}

/// `drivegen balance`: balances `inputs` into `out_dir` (`balanced_qa.arrow` and the reports).
/// Only compact facts about each row are held while deciding; the chosen rows are then read
/// back and written one scene at a time.
pub fn run(opts: &Options) -> Result<BalanceOutcome> {
    let (inputs, out_dir) = (opts.inputs.as_slice(), opts.out.as_path());
    for q in inputs {
        crate::store::paths::disjoint(q, "a QA table", out_dir, "the output")?;
    }
    let facts = scan(inputs)?;
    let _owned = crate::store::owner::Owned::claim(
        out_dir,
        "balance output",
        "balanced_qa.arrow and its report",
    )?;
    let mut plan = plan::plan(&facts, Some(opts));
    if let Some(margin) = opts.max_blind_excess {
        blind_filter(inputs, &facts, &mut plan, opts, margin, out_dir)?;
    }
    write_plan(inputs, &facts, &plan, &out_dir.join("balanced_qa.arrow"))?;
    let outcome = BalanceOutcome::of(plan);
    log_outcome(&outcome, out_dir);
    let report = stats::report_markdown(&outcome, opts);
    write_atomic(&out_dir.join("balance_report.md"), report.as_bytes())?;
    let json = stats::report_json(&outcome, opts);
    write_atomic(
        &out_dir.join("balance_report.json"),
        (serde_json::to_string_pretty(&json).unwrap_or_default() + "\n").as_bytes(),
    )?;
    Ok(outcome)
}

/// What balancing decided, for `-v`: the items kept, and per question type the rows before
/// and after with the share of the most common answer.
fn log_outcome(o: &BalanceOutcome, out_dir: &Path) {
    log::info!(
        "balance {}: kept {} of {} items ({} steps took a fallback answer, {} short of the \
         target), {} rows",
        out_dir.display(),
        o.selection.chosen.len(),
        o.items_in,
        o.selection.fallbacks,
        o.selection.shortfall,
        o.rows
    );
    for q in o.before.answers.keys() {
        log::info!(
            "balance {}: {q}: {} → {} rows, most common answer {:.2} → {:.2}",
            out_dir.display(),
            o.before.total(q),
            o.after.total(q),
            o.before.majority_accuracy(q),
            o.after.majority_accuracy(q)
        );
    }
}

/// Drops the planned rows that blind baselines answer without the image (see
/// [`crate::audit::Collector::filter`]) and records them, with the reason, in `blind_filter.jsonl`.
/// The family's planned rows are read into memory for this.
fn blind_filter(
    inputs: &[PathBuf],
    facts: &Facts,
    plan: &mut Plan,
    opts: &Options,
    margin: f64,
    out_dir: &Path,
) -> Result<()> {
    let mut files: Vec<QaFile> = inputs
        .iter()
        .map(|p| QaFile::open(p))
        .collect::<Result<_>>()?;
    // Each record batch is read once: the plan's rows are grouped by file and batch, and the
    // audit's compact rows are put back in plan order.
    let mut by_batch: BTreeMap<(u32, u32), Vec<(usize, u32)>> = BTreeMap::new();
    for (pos, &k) in plan.order.iter().enumerate() {
        let l = facts.loc(k);
        by_batch
            .entry((l.file, l.batch))
            .or_default()
            .push((pos, l.row));
    }
    let mut c = crate::audit::Collector::default();
    for ((file, batch), rows) in by_batch {
        let records = files[file as usize].batch(batch as usize)?;
        for (pos, row) in rows {
            let r = records.get(row as usize).ok_or_else(|| Error::Input {
                file: inputs[file as usize].clone(),
                record: format!("record batch {batch} row {row}"),
                detail: "the row vanished between two reads".into(),
            })?;
            match &plan.offered {
                // The filter judges the rows as they will be written.
                Some(o) => {
                    let mut r = r.clone();
                    plan::prune_record(facts, o, &mut r);
                    c.add_at(pos, &r);
                }
                None => c.add_at(pos, r),
            }
        }
    }
    let (keep, removed) = c.filter(margin);
    log::info!(
        "balance {}: the blind filter (margin {margin}) dropped {} of {} rows (blind_filter.jsonl)",
        out_dir.display(),
        removed.len(),
        keep.len()
    );
    plan.order = plan
        .order
        .iter()
        .zip(&keep)
        .filter_map(|(&k, &keep)| keep.then_some(k))
        .collect();
    plan.moves = if opts.balance_letters {
        plan::letter_moves(facts, &plan.order, plan.offered.as_ref())
    } else {
        vec![None; plan.order.len()]
    };
    plan.after = facts.distribution(plan.order.iter().copied().zip(plan.moves.iter().copied()));
    let mut log = String::new();
    for r in &removed {
        log.push_str(&serde_json::to_string(r).unwrap_or_default());
        log.push('\n');
    }
    write_atomic(&out_dir.join("blind_filter.jsonl"), log.as_bytes())
}

/// Writes every row of `inputs` to `out` in the canonical order, unbalanced; returns the row
/// count. (The release places every correct option, so letters need no balancing here.)
///
/// The canonical order puts the scene first, so each scene's rows are sorted on their own:
/// memory holds which record batches hold each scene and one scene's rows, however many rows
/// the family has.
pub fn gather(inputs: &[PathBuf], out: &Path) -> Result<usize> {
    let mut scenes: BTreeMap<String, BTreeSet<(usize, usize)>> = BTreeMap::new();
    qa::ipc::for_each_batch(inputs, |file, batch, rows| {
        for r in &rows {
            match scenes.get_mut(r.scene_id.as_str()) {
                Some(at) => {
                    at.insert((file, batch));
                }
                None => {
                    scenes.insert(r.scene_id.clone(), BTreeSet::from([(file, batch)]));
                }
            }
        }
        Ok(())
    })?;
    let mut files: Vec<QaFile> = inputs
        .iter()
        .map(|p| QaFile::open(p))
        .collect::<Result<_>>()?;
    let mut w = QaWriter::create(out)?;
    for (scene, batches) in &scenes {
        let mut rows = Vec::new();
        for &(file, batch) in batches {
            let records = files[file].batch(batch)?;
            rows.extend(records.into_iter().filter(|r| &r.scene_id == scene));
        }
        // Stable, as balancing's order is: rows with equal keys keep the tables' order.
        rows.sort_by_cached_key(plan::canonical_key);
        for r in rows {
            w.push(r)?;
        }
    }
    w.finish()
}

/// The facts of every row of `inputs`, read a batch at a time.
fn scan(inputs: &[PathBuf]) -> Result<Facts> {
    let mut facts = Facts::default();
    qa::ipc::for_each_batch(inputs, |file, batch, rows| {
        for (row, r) in rows.iter().enumerate() {
            let loc = Loc {
                file: file as u32,
                batch: batch as u32,
                row: row as u32,
            };
            facts.push(r, loc);
        }
        Ok(())
    })?;
    Ok(facts)
}

/// Writes the plan's rows. The order keeps each scene's rows together, so only the batches
/// holding the current scene's rows are in memory.
fn write_plan(inputs: &[PathBuf], facts: &Facts, plan: &Plan, out: &Path) -> Result<usize> {
    let mut files: Vec<QaFile> = inputs
        .iter()
        .map(|p| QaFile::open(p))
        .collect::<Result<_>>()?;
    let mut w = QaWriter::create(out)?;
    let mut start = 0;
    while start < plan.order.len() {
        let scene = facts.scene(plan.order[start]);
        let end = plan.order[start..]
            .iter()
            .position(|&k| facts.scene(k) != scene)
            .map_or(plan.order.len(), |n| start + n);
        let mut batches: BTreeMap<(u32, u32), Vec<Option<QaRecord>>> = BTreeMap::new();
        for &k in &plan.order[start..end] {
            let l = facts.loc(k);
            if let std::collections::btree_map::Entry::Vacant(e) = batches.entry((l.file, l.batch))
            {
                let rows = files[l.file as usize].batch(l.batch as usize)?;
                e.insert(rows.into_iter().map(Some).collect());
            }
        }
        for (&k, mv) in plan.order[start..end].iter().zip(&plan.moves[start..end]) {
            let l = facts.loc(k);
            let mut r = batches
                .get_mut(&(l.file, l.batch))
                .and_then(|b| b.get_mut(l.row as usize))
                .and_then(Option::take)
                .ok_or_else(|| Error::Input {
                    file: inputs[l.file as usize].clone(),
                    record: format!("record batch {} row {}", l.batch, l.row),
                    detail: "the row changed while balancing".into(),
                })?;
            if let Some(o) = &plan.offered {
                plan::prune_record(facts, o, &mut r);
            }
            if let Some(to) = mv {
                plan::move_answer(&mut r, usize::from(*to));
            }
            w.push(r)?;
        }
        start = end;
    }
    w.finish()
}
