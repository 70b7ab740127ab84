//! Class balancing of question tables: EgoDyn's greedy Algorithm 1 over items (clips or
//! frames) with source caps ([`greedy`]), per-type caps (STSBench-style), answer-letter
//! balancing for MCQs, and the before/after statistics a release report shows ([`stats`]).
//!
//! `drivegen balance` reads QA tables (the common record of `schemas/qa.json`), groups rows
//! into items (`clip_id` when set, else `scene_id` + `frame_idx`), selects items, keeps their
//! rows in a canonical order (item, family, type, id), and writes `balanced_qa.arrow`, `balance_report.md` and `balance_report.json`. The
//! output is a pure function of the input rows and the options.

pub mod greedy;
pub mod stats;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::FileWriter;

use self::greedy::{BalanceSpec, Item, Selection};
use self::stats::Distribution;
use crate::qa::{self, QaRecord};
use crate::store::atomic::{write_atomic, AtomicFile};
use crate::{Error, Result};

/// Options of a balancing run.
#[derive(Debug, Clone, Default)]
pub struct BalanceOptions {
    pub spec: BalanceSpec,
    /// Keep at most this many rows per (family, question type), the first by `qa_id`.
    pub type_cap: Option<usize>,
    /// Re-place each question's correct option so that answer letters are uniform within
    /// every (family, question type).
    pub balance_letters: bool,
}

/// The item a QA row belongs to.
pub fn item_key(r: &QaRecord) -> String {
    match (&r.clip_id, r.frame_idx) {
        (Some(c), _) => c.clone(),
        (None, Some(f)) => format!("{}#{f:06}", r.scene_id),
        (None, None) => format!("{}#{}", r.scene_id, r.qa_id),
    }
}

/// Groups rows into items; returns the items and, per item, the row indices.
pub fn items(rows: &[QaRecord]) -> (Vec<Item>, Vec<Vec<usize>>) {
    let mut by: BTreeMap<String, (Item, Vec<usize>)> = BTreeMap::new();
    for (k, r) in rows.iter().enumerate() {
        let key = item_key(r);
        let e = by.entry(key.clone()).or_insert_with(|| {
            (
                Item {
                    id: key,
                    source: r.source.clone(),
                    answers: BTreeMap::new(),
                },
                Vec::new(),
            )
        });
        e.0.answers
            .entry(format!("{}/{}", r.family, r.question_type))
            .or_default()
            .push(r.answer.clone());
        e.1.push(k);
    }
    by.into_values().unzip()
}

/// What [`balance_rows`] did.
#[derive(Debug, Clone)]
pub struct BalanceOutcome {
    pub rows: Vec<QaRecord>,
    pub selection: Selection,
    pub items_in: usize,
    pub before: Distribution,
    pub after: Distribution,
}

/// Balances rows in memory.
pub fn balance_rows(rows: &[QaRecord], opts: &BalanceOptions) -> BalanceOutcome {
    let (pool, members) = items(rows);
    let selection = greedy::select(&pool, &opts.spec);
    let mut keep: Vec<usize> = selection
        .chosen
        .iter()
        .flat_map(|&i| members[i].iter().copied())
        .collect();
    // A canonical order (item, family, type, id), so that balancing the outputs of N shards
    // gives the same bytes as balancing one unsharded output.
    keep.sort_by(|&a, &b| {
        let key = |k: usize| {
            let r = &rows[k];
            (item_key(r), &r.family, &r.question_type, &r.qa_id)
        };
        key(a).cmp(&key(b))
    });
    let mut out: Vec<QaRecord> = keep.iter().map(|&k| rows[k].clone()).collect();
    if let Some(cap) = opts.type_cap {
        out = cap_types(out, cap);
    }
    if opts.balance_letters {
        balance_letters(&mut out);
    }
    BalanceOutcome {
        before: Distribution::of(rows),
        after: Distribution::of(&out),
        rows: out,
        selection,
        items_in: pool.len(),
    }
}

/// At most `cap` rows per (family, type): the first by `qa_id`; output keeps input order.
pub fn cap_types(rows: Vec<QaRecord>, cap: usize) -> Vec<QaRecord> {
    let mut by: BTreeMap<(String, String), Vec<(String, usize)>> = BTreeMap::new();
    for (k, r) in rows.iter().enumerate() {
        by.entry((r.family.clone(), r.question_type.clone()))
            .or_default()
            .push((r.qa_id.clone(), k));
    }
    let mut keep = vec![false; rows.len()];
    for mut v in by.into_values() {
        v.sort();
        for (_, k) in v.into_iter().take(cap) {
            keep[k] = true;
        }
    }
    rows.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// Within every (family, type, number of options), the k-th row by `qa_id` gets its correct
/// option at position `k mod n` (the option there moves to where the correct one was), so the
/// letters are as uniform as the count allows and a model cannot win by always answering "A".
pub fn balance_letters(rows: &mut [QaRecord]) {
    let mut by: BTreeMap<(String, String, usize), Vec<(String, usize)>> = BTreeMap::new();
    for (k, r) in rows.iter().enumerate() {
        by.entry((r.family.clone(), r.question_type.clone(), r.choices.len()))
            .or_default()
            .push((r.qa_id.clone(), k));
    }
    for ((_, _, n), mut v) in by {
        if n < 2 {
            continue;
        }
        v.sort();
        for (rank, (_, k)) in v.into_iter().enumerate() {
            let r = &mut rows[k];
            let to = rank % n;
            let from = usize::from(r.answer_index).min(n - 1);
            let before = r.choices.clone();
            r.choices.swap(from, to);
            r.answer_index = to as u8;
            r.answer_letter = qa::letter(to).unwrap_or_default();
            r.answer = r.choices[to].clone();
            r.question = relabel_options(&r.question, &before, &r.choices);
        }
    }
}

/// Rewrites the options shown in a question to the new order: an inline list
/// `[opt1 / opt2 / …]` (EgoDyn's format), or lines `A. text` / `(A) text`. A question whose
/// text shows its options neither way is returned unchanged.
pub fn relabel_options(question: &str, before: &[String], choices: &[String]) -> String {
    let inline_old = format!("[{}]", before.join(" / "));
    if question.contains(&inline_old) {
        return question.replace(&inline_old, &format!("[{}]", choices.join(" / ")));
    }
    let mut out = Vec::new();
    let mut k = 0;
    for line in question.lines() {
        let t = line.trim_start();
        let lead = &line[..line.len() - t.len()];
        let want = qa::letter(k).unwrap_or_default();
        let dot = format!("{want}. ");
        let paren = format!("({want}) ");
        if k < choices.len() && t.starts_with(&dot) {
            out.push(format!("{lead}{dot}{}", choices[k]));
            k += 1;
        } else if k < choices.len() && t.starts_with(&paren) {
            out.push(format!("{lead}{paren}{}", choices[k]));
            k += 1;
        } else {
            out.push(line.to_string());
        }
    }
    let mut s = out.join("\n");
    if question.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Reads every QA table (Arrow IPC) in order.
pub fn read_qa(files: &[PathBuf]) -> Result<Vec<QaRecord>> {
    let mut rows = Vec::new();
    for f in files {
        let file = File::open(f).map_err(|e| Error::io(f, e))?;
        let reader = FileReader::try_new(file, None).map_err(|e| Error::Input {
            file: f.clone(),
            record: "file header".into(),
            detail: format!("not an Arrow IPC file: {e}"),
        })?;
        for b in reader {
            let b = b.map_err(|e| Error::Input {
                file: f.clone(),
                record: "record batch".into(),
                detail: e.to_string(),
            })?;
            rows.extend(qa::from_batch(&b).map_err(|e| Error::Input {
                file: f.clone(),
                record: "record batch".into(),
                detail: e.to_string(),
            })?);
        }
    }
    Ok(rows)
}

/// `drivegen balance`: balances `inputs` into `out_dir`.
pub fn run(inputs: &[PathBuf], out_dir: &Path, opts: &BalanceOptions) -> Result<BalanceOutcome> {
    let rows = read_qa(inputs)?;
    let outcome = balance_rows(&rows, opts);
    let file = out_dir.join("balanced_qa.arrow");
    let mut w = FileWriter::try_new(AtomicFile::create(&file)?, &qa::qa_schema())?;
    w.write(&qa::to_batch(&outcome.rows)?)?;
    w.finish()?;
    w.into_inner()?.commit()?;
    let report = stats::report_markdown(&outcome, opts);
    write_atomic(&out_dir.join("balance_report.md"), report.as_bytes())?;
    let json = stats::report_json(&outcome, opts);
    write_atomic(
        &out_dir.join("balance_report.json"),
        (serde_json::to_string_pretty(&json).unwrap_or_default() + "\n").as_bytes(),
    )?;
    Ok(outcome)
}
