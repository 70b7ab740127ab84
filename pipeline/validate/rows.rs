//! The per-row and per-split checks of `validate`, read from the shards a few rows at a time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use arrow::array::{Array, AsArray, ListArray, RecordBatch, StringArray};
use arrow::datatypes::{UInt32Type, UInt8Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{layouts, Listed, Report, CONTROL_SUFFIX};
use crate::release::read::list_strings;

/// Rows per batch read: a batch holds a copy of every image of every row it has.
const BATCH_ROWS: usize = 16;

/// A control image is black if no channel of any pixel exceeds this (JPEG may leave a trace).
const BLACK_LEVEL: u8 = 8;

/// What one distinct image decoded to.
#[derive(Debug, Clone)]
enum Decoded {
    Ok {
        width: u32,
        height: u32,
        black: bool,
        /// What a corrupted image is told apart from its clean one by.
        stats: super::robust::Stats,
    },
    Bad(String),
}

/// What is carried from row to row and shard to shard.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Per split, 64 bits of a digest of each `qa_id` ([`id_key`]), eight bytes a row: sorted
    /// at the end, and the ids whose digests meet are read again ([`repeated_ids`]), which
    /// tells a repeat from a collision and names the row that repeats.
    ids: HashMap<String, Vec<u64>>,
    pub counts: BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>>,
    /// Per (family, type, options): how often each letter is the answer, main splits only.
    letters: BTreeMap<(String, String, usize), Vec<usize>>,
    /// Per (split, qa_id) of a main split: a digest of what a control row must repeat.
    /// Keyed by [`id_key`] of (split, qa_id); kept when `paired`, or for the rows a
    /// robustness split repeats.
    fingerprints: HashMap<u128, [u8; 32]>,
    /// Whether a text-only control split repeats a main split: without one, only the rows a
    /// robustness split repeats keep their fingerprints (about 60 bytes a row).
    pub paired: bool,
    /// Control rows, (control split, shard, qa_id, digest), checked once every main row is
    /// read; split and shard are indices into `names`, as a release has few of each.
    controls: Vec<(u32, u32, String, [u8; 32])>,
    names: crate::qa::compact::Names,
    decoded: HashMap<[u8; 32], Decoded>,
    pub images: usize,
    /// The robustness splits and what their rows must repeat.
    pub robust: super::robust::Robust,
}

impl State {
    pub(crate) fn rows_per_split(&self) -> BTreeMap<String, usize> {
        self.ids.iter().map(|(k, v)| (k.clone(), v.len())).collect()
    }

    pub fn distinct_images(&self) -> usize {
        self.decoded.len()
    }
}

/// One row's columns.
pub(super) struct Row {
    pub(super) qa_id: String,
    pub(super) family: String,
    pub(super) qtype: String,
    pub(super) question: String,
    pub(super) choices: Vec<String>,
    pub(super) answer_index: u8,
    pub(super) answer_letter: String,
    pub(super) answer: String,
    pub(super) cameras: Vec<String>,
    pub(super) frame_ids: Vec<String>,
    pub(super) image_paths: Vec<String>,
    pub(super) widths: Vec<u32>,
    pub(super) heights: Vec<u32>,
    /// How many source files and source frame keys the row names (one each per image).
    pub(super) source_files: usize,
    pub(super) source_frames: usize,
    /// Digest of each image's bytes (None where only a path is published).
    pub(super) images: Vec<Option<[u8; 32]>>,
    /// The setting columns (None in a release written before they existed).
    pub(super) setting: Option<String>,
    pub(super) base_qa_id: Option<String>,
    pub(super) corruption: Option<String>,
    pub(super) severity: Option<u8>,
    pub(super) corruption_seed: Option<u64>,
}

fn u32s(l: &ListArray, i: usize) -> Vec<u32> {
    let v = l.value(i);
    v.as_primitive_opt::<UInt32Type>()
        .map(|s| s.values().to_vec())
        .unwrap_or_default()
}

/// The rows of a batch, and the bytes of its images not decoded yet.
fn rows_of(
    b: &RecordBatch,
    state: &State,
    new: &mut HashMap<[u8; 32], Vec<u8>>,
) -> Result<Vec<Row>, String> {
    let col = |n: &str| b.column_by_name(n).ok_or(format!("no column {n}"));
    let s = |n: &str| -> Result<&StringArray, String> {
        col(n)?
            .as_string_opt::<i32>()
            .ok_or(format!("column {n} is not a string column"))
    };
    let l = |n: &str| -> Result<&ListArray, String> {
        col(n)?
            .as_list_opt::<i32>()
            .ok_or(format!("column {n} is not a list column"))
    };
    let (qa_id, family, qtype, question) = (
        s("qa_id")?,
        s("family")?,
        s("question_type")?,
        s("question")?,
    );
    let (letter, answer) = (s("answer_letter")?, s("answer")?);
    let idx = col("answer_index")?
        .as_primitive_opt::<UInt8Type>()
        .ok_or("column answer_index is not uint8")?;
    let (choices, cameras, frame_ids, paths) = (
        l("choices")?,
        l("cameras")?,
        l("camera_frame_ids")?,
        l("image_paths")?,
    );
    let (widths, heights, images) = (l("image_widths")?, l("image_heights")?, l("images")?);
    let (sources, frames) = (l("source_files")?, l("source_frame_ids")?);
    let opt_s = |n: &str| b.column_by_name(n).and_then(|c| c.as_string_opt::<i32>());
    let (setting, base, corruption) = (opt_s("setting"), opt_s("base_qa_id"), opt_s("corruption"));
    let severity = b
        .column_by_name("severity")
        .and_then(|c| c.as_primitive_opt::<UInt8Type>());
    let cseed = b
        .column_by_name("corruption_seed")
        .and_then(|c| c.as_primitive_opt::<arrow::datatypes::UInt64Type>());
    let text = |a: Option<&StringArray>, i: usize| {
        a.filter(|a| !a.is_null(i)).map(|a| a.value(i).to_string())
    };
    let mut out = Vec::with_capacity(b.num_rows());
    for i in 0..b.num_rows() {
        let imgs = images.value(i);
        let st = imgs
            .as_struct_opt()
            .ok_or("column images is not a list of structs")?;
        let bytes = st
            .column_by_name("bytes")
            .and_then(|c| c.as_binary_opt::<i32>())
            .ok_or("images has no binary `bytes` field")?;
        let mut digests = Vec::with_capacity(bytes.len());
        for k in 0..bytes.len() {
            if bytes.is_null(k) {
                digests.push(None);
                continue;
            }
            let v = bytes.value(k);
            let d: [u8; 32] = Sha256::digest(v).into();
            if !state.decoded.contains_key(&d) && !new.contains_key(&d) {
                new.insert(d, v.to_vec());
            }
            digests.push(Some(d));
        }
        out.push(Row {
            qa_id: qa_id.value(i).into(),
            family: family.value(i).into(),
            qtype: qtype.value(i).into(),
            question: question.value(i).into(),
            choices: list_strings(choices, i),
            answer_index: idx.value(i),
            answer_letter: letter.value(i).into(),
            answer: answer.value(i).into(),
            cameras: list_strings(cameras, i),
            frame_ids: list_strings(frame_ids, i),
            image_paths: list_strings(paths, i),
            widths: u32s(widths, i),
            heights: u32s(heights, i),
            source_files: sources.value(i).len(),
            source_frames: frames.value(i).len(),
            images: digests,
            setting: text(setting, i),
            base_qa_id: text(base, i),
            corruption: text(corruption, i),
            severity: severity.filter(|a| !a.is_null(i)).map(|a| a.value(i)),
            corruption_seed: cseed.filter(|a| !a.is_null(i)).map(|a| a.value(i)),
        });
    }
    Ok(out)
}

fn decode(bytes: &[u8]) -> Decoded {
    match crate::images::decode_checked(bytes, None) {
        Ok(rgb) => Decoded::Ok {
            width: rgb.width(),
            height: rgb.height(),
            black: rgb.as_raw().iter().all(|&v| v <= BLACK_LEVEL),
            stats: super::robust::Stats::of(&rgb),
        },
        Err(e) => Decoded::Bad(e),
    }
}

/// Reads one shard and checks its rows.
pub(crate) fn check_shard(dir: &Path, shard: &Listed, state: &mut State, rep: &mut Report) {
    let path = dir.join(&shard.path);
    let fail = |rep: &mut Report, detail: String| {
        rep.add("shard_unreadable", Some(&shard.path), None, detail);
    };
    if !path.exists() {
        return; // already reported as missing
    }
    if let Err(e) = crate::release::read::shard_file(dir, &path) {
        return fail(rep, e.report().to_string());
    }
    let file = match crate::store::input::open(&path) {
        Ok(f) => f,
        Err(e) => return fail(rep, e.report().to_string()),
    };
    let builder = match ParquetRecordBatchReaderBuilder::try_new(file) {
        Ok(b) => b,
        Err(e) => return fail(rep, e.to_string()),
    };
    let rows_in_meta = builder.metadata().file_metadata().num_rows() as u64;
    if rows_in_meta != shard.rows {
        rep.add(
            "shard_rows",
            Some(&shard.path),
            None,
            format!("{rows_in_meta} rows, the manifest says {}", shard.rows),
        );
    }
    drop(builder);
    // Bounded: a forged shard's strings are measured before they are copied out.
    let all = |_: &parquet::schema::types::SchemaDescriptor| parquet::arrow::ProjectionMask::all();
    let reader = match crate::release::bounded::open(&path, all, BATCH_ROWS) {
        Ok(r) => r,
        Err(e) => return fail(rep, e.report().to_string()),
    };
    let control = shard.split.ends_with(CONTROL_SUFFIX);
    let robust = state.robust.is_robust(&shard.split);
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => return fail(rep, e.report().to_string()),
        };
        let mut new = HashMap::new();
        let rows = match rows_of(&batch, state, &mut new) {
            Ok(r) => r,
            Err(e) => return fail(rep, e),
        };
        let decoded: Vec<([u8; 32], Decoded)> =
            new.into_par_iter().map(|(d, b)| (d, decode(&b))).collect();
        state.decoded.extend(decoded);
        for row in &rows {
            check_row(row, shard, control, robust, state, rep);
        }
    }
}

/// Checks one row and records what later checks need: its id and count, and either its
/// fingerprint and answer letter (main splits) or the fingerprint its main row must match
/// (controls).
fn check_row(
    r: &Row,
    shard: &Listed,
    control: bool,
    robust: bool,
    state: &mut State,
    rep: &mut Report,
) {
    let mut bad = |check: &str, detail: String| {
        rep.add(check, Some(&shard.path), Some(&r.qa_id), detail);
    };
    state
        .ids
        .entry(shard.split.clone())
        .or_default()
        .push(id_key(&[&r.qa_id]) as u64);
    *state
        .counts
        .entry(shard.split.clone())
        .or_default()
        .entry(r.family.clone())
        .or_default()
        .entry(r.qtype.clone())
        .or_default() += 1;
    if shard.family.as_deref() != Some(r.family.as_str()) {
        // A family's config reads its files only: a row filed under another family is
        // missing from its own config and counted in a wrong one.
        bad(
            "shard_family",
            format!(
                "a {} question in a shard of {}",
                r.family,
                shard.family.as_deref().unwrap_or("no family")
            ),
        );
    }
    check_key(r, &mut bad);
    check_prompt(r, &mut bad);
    let sizes = check_images(r, control, state, &mut bad);
    let digest = fingerprint(r, &sizes);
    let n = r.choices.len();
    let i = usize::from(r.answer_index);
    if n < 2 || i >= n {
        // Reported by `check_key`; a row without a usable key has no letter to count.
        return;
    }
    if robust {
        // Its key and letter are its clean row's: checked against that row, not balanced.
        state.robust.note_repeat(r, shard, digest);
    } else if control {
        let (split, path) = (state.names.id(&shard.split), state.names.id(&shard.path));
        state.controls.push((split, path, r.qa_id.clone(), digest));
    } else {
        state.robust.note_clean(r, &shard.split);
        if state.paired || state.robust.repeats(&shard.split, &r.qa_id) {
            state
                .fingerprints
                .insert(id_key(&[&shard.split, &r.qa_id]), digest);
        }
        state
            .letters
            .entry((r.family.clone(), r.qtype.clone(), n))
            .or_insert_with(|| vec![0; n])[i.min(n.saturating_sub(1))] += 1;
    }
}

/// The answer key: distinct choices, exactly one of them the answer, and the index, letter
/// and option order agreeing with it.
fn check_key(r: &Row, bad: &mut impl FnMut(&str, String)) {
    let n = r.choices.len();
    let distinct: BTreeSet<&String> = r.choices.iter().collect();
    if n < 2 || distinct.len() != n {
        bad(
            "choices",
            format!(
                "choices are not at least two distinct options: {:?}",
                r.choices
            ),
        );
    }
    let correct = r.choices.iter().filter(|c| **c == r.answer).count();
    if correct != 1 {
        bad(
            "answer",
            format!(
                "the answer {:?} is {correct} of the choices, not exactly one",
                r.answer
            ),
        );
    }
    let i = usize::from(r.answer_index);
    if r.choices.get(i) != Some(&r.answer) {
        bad(
            "answer_index",
            format!(
                "choices[{i}] is {:?}, the answer is {:?}",
                r.choices.get(i),
                r.answer
            ),
        );
    }
    let want_letter = (i < 26).then(|| char::from(b'A' + i as u8).to_string());
    if want_letter.as_deref() != Some(r.answer_letter.as_str()) {
        bad(
            "answer_letter",
            format!(
                "answer_letter {:?} is not the letter of answer_index {i}",
                r.answer_letter
            ),
        );
    }
    if let Some(why) = out_of_order(&r.family, &r.qtype, &r.choices) {
        bad("option_order", why);
    }
}

/// That the options the prompt shows are the choices, in order, so the key cannot
/// contradict what a model reads.
fn check_prompt(r: &Row, bad: &mut impl FnMut(&str, String)) {
    match layouts::shown_options(&r.family, &r.question) {
        Ok(shown) if shown == r.choices => {}
        Ok(shown) => bad(
            "options_in_prompt",
            format!(
                "the prompt shows {shown:?}, choices are {:?}: the answer key contradicts the prompt",
                r.choices
            ),
        ),
        Err(e) => bad(
            "options_in_prompt",
            format!("the {} layout cannot be read back: {e}", r.family),
        ),
    }
}

/// The images: per-camera columns aligned, each image decodable, of the size its row says,
/// and black in a control. Returns the decoded sizes, which a control row must repeat.
fn check_images(
    r: &Row,
    control: bool,
    state: &mut State,
    bad: &mut impl FnMut(&str, String),
) -> Vec<(u32, u32)> {
    let k = r.cameras.len();
    let lens = [
        ("camera_frame_ids", r.frame_ids.len()),
        ("images", r.images.len()),
        ("image_widths", r.widths.len()),
        ("image_heights", r.heights.len()),
        ("source_files", r.source_files),
        ("source_frame_ids", r.source_frames),
    ];
    for (name, len) in lens {
        if len != k {
            bad("image_alignment", format!("{k} cameras but {len} {name}"));
        }
    }
    if !r.image_paths.is_empty() && r.image_paths.len() != k {
        bad(
            "image_alignment",
            format!("{k} cameras but {} image_paths", r.image_paths.len()),
        );
    }
    let mut sizes = Vec::with_capacity(k);
    for (j, d) in r.images.iter().enumerate() {
        state.images += 1;
        let Some(d) = d else { continue };
        let want = (
            r.widths.get(j).copied().unwrap_or(0),
            r.heights.get(j).copied().unwrap_or(0),
        );
        let cam = r.cameras.get(j).map_or("?", String::as_str);
        match state.decoded.get(d) {
            Some(Decoded::Ok {
                width,
                height,
                black,
                ..
            }) => {
                sizes.push((*width, *height));
                if want != (0, 0) && (*width, *height) != want {
                    bad(
                        "image_size",
                        format!(
                            "image {j} ({cam}) is {width}×{height}, its row says {}×{}",
                            want.0, want.1
                        ),
                    );
                }
                if control && !black {
                    bad(
                        "control_image",
                        format!("image {j} ({cam}) of a text-only control is not black"),
                    );
                }
            }
            Some(Decoded::Bad(why)) => bad("image_decode", format!("image {j} ({cam}) {why}")),
            None => {}
        }
    }
    sizes
}

/// What a control row must repeat of its main row: the question, its key and the image
/// sizes.
fn fingerprint(r: &Row, sizes: &[(u32, u32)]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [&r.family, &r.qtype, &r.question, &r.answer] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for c in &r.choices {
        h.update((c.len() as u64).to_le_bytes());
        h.update(c.as_bytes());
    }
    h.update([r.answer_index]);
    for (w, hh) in sizes {
        h.update(w.to_le_bytes());
        h.update(hh.to_le_bytes());
    }
    h.finalize().into()
}

/// Why ordinal options are not shown in their order, if they are not: SIG's directions
/// clockwise around the circle (from any start), its distances near to far.
fn out_of_order(family: &str, qtype: &str, choices: &[String]) -> Option<String> {
    use crate::qa::OptionOrder;
    use crate::sig::grid::{DIRECTIONAL, PROXIMAL};
    let order = crate::qa::option_order(family, qtype);
    let labels: &[&str] = match order {
        OptionOrder::Free => return None,
        OptionOrder::Circle | OptionOrder::Arc => &DIRECTIONAL,
        OptionOrder::Line => &PROXIMAL,
    };
    let ids: Option<Vec<usize>> = choices
        .iter()
        .map(|c| labels.iter().position(|l| l == c))
        .collect();
    let Some(ids) = ids else {
        return Some(format!("{choices:?} are not all {family} {qtype} labels"));
    };
    let m = labels.len();
    let ok = ids.windows(2).all(|w| match order {
        OptionOrder::Line => w[0] < w[1],
        _ => w[1] == (w[0] + 1) % m,
    });
    (!ok).then(|| format!("{choices:?} are not in their order ({order:?})"))
}

/// A 128-bit digest of `parts` (length-prefixed, so no two lists of parts share one): the
/// checks that pair rows by id hold this instead of the strings.
fn id_key(parts: &[&str]) -> u128 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    let d = h.finalize();
    u128::from_le_bytes(d[..16].try_into().unwrap_or_default())
}

/// Reports every `qa_id` a split holds twice, at the row that repeats it. Only the ids whose
/// digests meet are read again, from the split's `qa_id` columns.
pub(crate) fn repeated_ids(dir: &Path, listed: &[Listed], state: &mut State, rep: &mut Report) {
    for (split, keys) in state.ids.iter_mut() {
        keys.sort_unstable();
        let met: HashSet<u64> = keys
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        if met.is_empty() {
            continue;
        }
        let mut seen: HashSet<String> = HashSet::new();
        for shard in listed.iter().filter(|l| &l.split == split) {
            // An unreadable shard is reported where its rows are read.
            let _ = crate::release::read::for_each_id(&dir.join(&shard.path), |id| {
                if met.contains(&(id_key(&[id]) as u64)) && !seen.insert(id.to_string()) {
                    rep.add(
                        "duplicate_id",
                        Some(&shard.path),
                        Some(id),
                        format!("qa_id appears twice in split {split}"),
                    );
                }
            });
        }
    }
}

/// The checks that need every row: controls against their main split, and letter balance.
pub(crate) fn finish(state: &State, rep: &mut Report) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (split, shard, id, digest) in &state.controls {
        let (split, shard) = (state.names.name(*split), state.names.name(*shard));
        let main = split.trim_end_matches(CONTROL_SUFFIX);
        *seen.entry(split).or_default() += 1;
        match state.fingerprints.get(&id_key(&[main, id])) {
            None => rep.add(
                "control_split",
                Some(shard),
                Some(id),
                format!("a text-only control of a question that is not in split {main}"),
            ),
            Some(d) if d != digest => rep.add(
                "control_split",
                Some(shard),
                Some(id),
                format!(
                    "differs from the question in split {main} (prompt, choices, key or image sizes)"
                ),
            ),
            Some(_) => {}
        }
    }
    for (split, n) in seen {
        let main = split.trim_end_matches(CONTROL_SUFFIX);
        let want = state.ids.get(main).map_or(0, Vec::len);
        if n != want {
            rep.add(
                "control_split",
                None,
                None,
                format!("split {split} holds {n} questions, split {main} {want}"),
            );
        }
    }
    letter_balance(state, rep);
    state.robust.finish(state, rep);
}

impl State {
    /// The fingerprint of a main split's row.
    pub(super) fn fingerprint_of(&self, split: &str, qa_id: &str) -> Option<&[u8; 32]> {
        self.fingerprints.get(&id_key(&[split, qa_id]))
    }

    /// What an image decoded to, if it was decoded.
    pub(super) fn stats_of(&self, d: &[u8; 32]) -> Option<&super::robust::Stats> {
        match self.decoded.get(d) {
            Some(Decoded::Ok { stats, .. }) => Some(stats),
            _ => None,
        }
    }
}

/// Letters uniform within each (family, type, options) and (family, options), up to the
/// remainder: the largest and smallest count differ by at most one.
fn letter_balance(state: &State, rep: &mut Report) {
    let mut by_family: BTreeMap<(&str, usize), Vec<usize>> = BTreeMap::new();
    let uneven = |v: &[usize]| {
        let (lo, hi) = (
            v.iter().min().copied().unwrap_or(0),
            v.iter().max().copied().unwrap_or(0),
        );
        hi > lo + 1
    };
    let show = |v: &[usize]| {
        v.iter()
            .enumerate()
            .map(|(i, n)| format!("{}:{n}", char::from(b'A' + (i % 26) as u8)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for ((family, qtype, n), counts) in &state.letters {
        if !crate::qa::option_order(family, qtype).movable() {
            // The letter is the answer's rank among ordered options; the blind audit measures
            // what it gives away.
            continue;
        }
        let f = by_family.entry((family, *n)).or_insert_with(|| vec![0; *n]);
        for (a, b) in f.iter_mut().zip(counts) {
            *a += b;
        }
        if uneven(counts) {
            rep.add(
                "letter_balance",
                None,
                None,
                format!(
                    "{family}/{qtype} with {n} options: answer letters {} are not uniform up to the remainder",
                    show(counts)
                ),
            );
        }
    }
    for ((family, n), counts) in by_family {
        if uneven(&counts) {
            rep.add(
                "letter_balance",
                None,
                None,
                format!(
                    "{family} with {n} options: answer letters {} over all its types: the remainders fall on the same letters",
                    show(&counts)
                ),
            );
        }
    }
}
