//! The common QA record of `docs/qa-schema.md`, shared by every question family.
//!
//! Every family writes its questions as rows of [`qa_schema`] (families may append columns of
//! their own after these, never drop or rename one). This module owns the row type, its Arrow
//! conversion, the stable id, the seeded option shuffling and the invariants every family's
//! tests check.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ListArray, ListBuilder, RecordBatch, StringArray, StringBuilder, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use sha2::{Digest, Sha256};

use super::prompt::{Layout, Prompt};
use crate::store::schema::list_utf8;
use crate::{Error, Result};

/// The families of questions, by name ([`Family::name`], in [`Family::ALL`]'s order).
pub(crate) const FAMILIES: [&str; 5] = [
    Family::Egodyn.name(),
    Family::Metavqa.name(),
    Family::Stsbench.name(),
    Family::Sig.name(),
    Family::Drivebench.name(),
];

/// A family of questions: the `family` column of every QA row and the family keys of a build
/// config. Serialised as its snake_case name (the strings of [`FAMILIES`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Egodyn,
    Metavqa,
    Stsbench,
    Sig,
    Drivebench,
}

impl Family {
    /// Every family, in [`FAMILIES`]'s order.
    pub const ALL: [Family; 5] = [
        Family::Egodyn,
        Family::Metavqa,
        Family::Stsbench,
        Family::Sig,
        Family::Drivebench,
    ];

    /// The name rows, configs and folders use.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Egodyn => "egodyn",
            Family::Metavqa => "metavqa",
            Family::Stsbench => "stsbench",
            Family::Sig => "sig",
            Family::Drivebench => "drivebench",
        }
    }

    /// The family named `name` (exactly, as [`Family::name`] spells it).
    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One question, in the columns every family shares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QaRecord {
    /// Stable id: see [`qa_id`].
    pub qa_id: String,
    pub family: String,
    /// snake_case type within the family (`turn_direction`, `pick_closer`, …).
    pub question_type: String,
    /// The question's parts: the prompt the model reads (the `question` column) is rendered
    /// from them and `choices` when the record is written, never stored, so it always shows
    /// the options in `choices` order ([`QaRecord::question`]).
    pub prompt: Prompt,
    /// Option texts in displayed order.
    pub choices: Vec<String>,
    pub answer_index: u8,
    /// `A`, `B`, … matching `answer_index`.
    pub answer_letter: String,
    /// `choices[answer_index]`.
    pub answer: String,
    /// `nuscenes`, `waymo`, `carla`, `synthetic`.
    pub source: String,
    pub scene_id: String,
    /// The keyframe the question is about (None for clip questions).
    pub frame_idx: Option<u32>,
    /// The clip the question is about (None for frame questions).
    pub clip_id: Option<String>,
    /// Cameras whose images the question shows, in display order.
    pub cameras: Vec<String>,
    /// The source ids of those images, aligned with `cameras`.
    pub camera_frame_ids: Vec<String>,
    /// Track ids the question refers to.
    pub objects: Vec<String>,
    /// JSON object: Set-of-Mark label → track id (`{}` when unmarked).
    pub marks: String,
    /// Corruption applied to the shown images (None when clean).
    pub corruption: Option<String>,
    pub severity: Option<u8>,
    /// The rule or query program that produced the answer.
    pub rule: String,
    /// JSON: the parameters (thresholds, bins) the rule used.
    pub params: String,
    /// JSON: the measured values behind the answer.
    pub evidence: String,
    /// The seed that drew options, labels and corruptions.
    pub seed: u64,
    /// Images shown instead of the store's own (corrupted, marked), aligned with `cameras`,
    /// relative to the producing stage's output folder; empty when the store's images are
    /// shown. A drivegen column after the common ones.
    pub image_paths: Vec<String>,
}

impl QaRecord {
    /// The full prompt as the model sees it, options in `choices` order in the family's layout.
    pub fn question(&self) -> String {
        self.prompt.render(&self.choices)
    }
}

/// The Arrow schema of the common record, in the column order of `docs/qa-schema.md`.
pub fn qa_schema() -> SchemaRef {
    Arc::new(Schema::new(qa_fields()))
}

/// The common columns, for families that append their own after them.
pub(crate) fn qa_fields() -> Vec<Field> {
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    vec![
        s("qa_id"),
        s("family"),
        s("question_type"),
        s("question"),
        list_utf8("choices"),
        Field::new("answer_index", DataType::UInt8, false),
        s("answer_letter"),
        s("answer"),
        s("source"),
        s("scene_id"),
        Field::new("frame_idx", DataType::UInt32, true),
        Field::new("clip_id", DataType::Utf8, true),
        list_utf8("cameras"),
        list_utf8("camera_frame_ids"),
        list_utf8("objects"),
        s("marks"),
        Field::new("corruption", DataType::Utf8, true),
        Field::new("severity", DataType::UInt8, true),
        s("rule"),
        s("params"),
        s("evidence"),
        Field::new("seed", DataType::UInt64, false),
        list_utf8("image_paths"),
        s("prompt_layout"),
        s("prompt_preamble"),
        s("prompt_stem"),
        s("prompt_postamble"),
        list_utf8("option_notes"),
    ]
}

fn string_list<'a>(rows: impl Iterator<Item = &'a Vec<String>>) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Utf8,
        false,
    )));
    for r in rows {
        for v in r {
            b.values().append_value(v);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

/// The common columns of `rows` (in [`qa_fields`] order).
pub(crate) fn columns(rows: &[QaRecord]) -> Vec<ArrayRef> {
    let notes: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.prompt.notes_for(&r.choices))
        .collect();
    let strs = |f: &dyn Fn(&QaRecord) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    vec![
        strs(&|r| &r.qa_id),
        strs(&|r| &r.family),
        strs(&|r| &r.question_type),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(QaRecord::question),
        )),
        string_list(rows.iter().map(|r| &r.choices)),
        Arc::new(UInt8Array::from_iter_values(
            rows.iter().map(|r| r.answer_index),
        )),
        strs(&|r| &r.answer_letter),
        strs(&|r| &r.answer),
        strs(&|r| &r.source),
        strs(&|r| &r.scene_id),
        Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.frame_idx))),
        Arc::new(StringArray::from_iter(
            rows.iter().map(|r| r.clip_id.as_deref()),
        )),
        string_list(rows.iter().map(|r| &r.cameras)),
        string_list(rows.iter().map(|r| &r.camera_frame_ids)),
        string_list(rows.iter().map(|r| &r.objects)),
        strs(&|r| &r.marks),
        Arc::new(StringArray::from_iter(
            rows.iter().map(|r| r.corruption.as_deref()),
        )),
        Arc::new(UInt8Array::from_iter(rows.iter().map(|r| r.severity))),
        strs(&|r| &r.rule),
        strs(&|r| &r.params),
        strs(&|r| &r.evidence),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.seed))),
        string_list(rows.iter().map(|r| &r.image_paths)),
        strs(&|r| r.prompt.layout.name()),
        strs(&|r| &r.prompt.preamble),
        strs(&|r| &r.prompt.stem),
        strs(&|r| &r.prompt.postamble),
        string_list(notes.iter()),
    ]
}

/// A record batch of [`qa_schema`].
pub fn to_batch(rows: &[QaRecord]) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(qa_schema(), columns(rows))?)
}

fn schema_err(detail: String) -> Error {
    Error::Schema {
        table: "qa".into(),
        detail,
    }
}

fn col<'a, A: 'static>(b: &'a RecordBatch, name: &str) -> Result<&'a A> {
    b.column_by_name(name)
        .ok_or_else(|| schema_err(format!("missing column {name}")))?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| {
            schema_err(format!(
                "column {name} has type {:?}",
                b.column_by_name(name).map(|c| c.data_type().clone())
            ))
        })
}

fn list_values(l: &ListArray, i: usize, name: &str) -> Result<Vec<String>> {
    let v = l.value(i);
    let s = v
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| schema_err(format!("{name} is not list<string>")))?;
    Ok(s.iter()
        .map(|x| x.unwrap_or_default().to_string())
        .collect())
}

/// Reads the common columns of a batch (extra columns are ignored).
pub fn from_batch(b: &RecordBatch) -> Result<Vec<QaRecord>> {
    let s = |n: &str| col::<StringArray>(b, n);
    let (qa_id, family, qtype) = (s("qa_id")?, s("family")?, s("question_type")?);
    let (layout, preamble, stem, postamble) = (
        s("prompt_layout")?,
        s("prompt_preamble")?,
        s("prompt_stem")?,
        s("prompt_postamble")?,
    );
    let notes: &ListArray = col(b, "option_notes")?;
    let choices: &ListArray = col(b, "choices")?;
    let answer_index: &UInt8Array = col(b, "answer_index")?;
    let (letter, answer, source, scene) = (
        s("answer_letter")?,
        s("answer")?,
        s("source")?,
        s("scene_id")?,
    );
    let frame_idx: &UInt32Array = col(b, "frame_idx")?;
    let clip_id = s("clip_id")?;
    let cameras: &ListArray = col(b, "cameras")?;
    let frame_ids: &ListArray = col(b, "camera_frame_ids")?;
    let objects: &ListArray = col(b, "objects")?;
    let marks = s("marks")?;
    let corruption = s("corruption")?;
    let severity: &UInt8Array = col(b, "severity")?;
    let (rule, params, evidence) = (s("rule")?, s("params")?, s("evidence")?);
    let seed: &UInt64Array = col(b, "seed")?;
    // Tables written before the column existed show the store's images.
    let image_paths: Option<&ListArray> = match b.column_by_name("image_paths") {
        Some(_) => Some(col(b, "image_paths")?),
        None => None,
    };
    let opt = |a: &StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_string());
    (0..b.num_rows())
        .map(|i| {
            let choices = list_values(choices, i, "choices")?;
            let layout = Layout::from_name(layout.value(i)).ok_or_else(|| {
                schema_err(format!(
                    "row {i} ({}): unknown prompt_layout {:?}",
                    qa_id.value(i),
                    layout.value(i)
                ))
            })?;
            let notes = list_values(notes, i, "option_notes")?;
            let prompt = Prompt {
                layout,
                preamble: preamble.value(i).into(),
                stem: stem.value(i).into(),
                postamble: postamble.value(i).into(),
                notes: choices
                    .iter()
                    .zip(notes)
                    .filter(|(_, n)| !n.is_empty())
                    .map(|(c, n)| (c.clone(), n))
                    .collect(),
            };
            Ok(QaRecord {
                qa_id: qa_id.value(i).into(),
                family: family.value(i).into(),
                question_type: qtype.value(i).into(),
                prompt,
                choices,
                answer_index: answer_index.value(i),
                answer_letter: letter.value(i).into(),
                answer: answer.value(i).into(),
                source: source.value(i).into(),
                scene_id: scene.value(i).into(),
                frame_idx: frame_idx.is_valid(i).then(|| frame_idx.value(i)),
                clip_id: opt(clip_id, i),
                cameras: list_values(cameras, i, "cameras")?,
                camera_frame_ids: list_values(frame_ids, i, "camera_frame_ids")?,
                objects: list_values(objects, i, "objects")?,
                marks: marks.value(i).into(),
                corruption: opt(corruption, i),
                severity: severity.is_valid(i).then(|| severity.value(i)),
                rule: rule.value(i).into(),
                params: params.value(i).into(),
                evidence: evidence.value(i).into(),
                seed: seed.value(i),
                image_paths: match image_paths {
                    Some(l) => list_values(l, i, "image_paths")?,
                    None => Vec::new(),
                },
            })
        })
        .collect()
}

/// The stable id of a question: `{family}-{16 hex digits}` of SHA-256 over the family, the
/// question type, the source references (scene, clip, frame, track ids … in a fixed order),
/// the corruption and the seed. Fields are length-prefixed, so no two different inputs can
/// produce the same hashed text.
pub fn qa_id(
    family: &str,
    question_type: &str,
    source_refs: &[&str],
    corruption: Option<&str>,
    seed: u64,
) -> String {
    let mut h = Sha256::new();
    let mut field = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    field(family);
    field(question_type);
    field(&source_refs.len().to_string());
    for r in source_refs {
        field(r);
    }
    field(corruption.unwrap_or("\u{0}clean"));
    field(&seed.to_string());
    let d = h.finalize();
    let hex: String = d.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{family}-{hex}")
}

/// The letter of option `i`: `A` … `Z` (None past 26 options).
pub fn letter(i: usize) -> Option<String> {
    (i < 26).then(|| char::from(b'A' + i as u8).to_string())
}

/// The index of a letter (`A` → 0).
pub fn letter_index(l: &str) -> Option<usize> {
    let b = l.as_bytes();
    (b.len() == 1 && b[0].is_ascii_uppercase()).then(|| (b[0] - b'A') as usize)
}

/// A small deterministic generator (SplitMix64) for shuffles; no global state, so the same
/// seed always gives the same order on every platform.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n ≥ 1), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }
}

/// The shuffle seed of one question: derived from its id, so every question is shuffled
/// independently but reproducibly.
pub(crate) fn shuffle_seed(qa_id: &str) -> u64 {
    let d = Sha256::digest(format!("shuffle\u{0}{qa_id}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// `choices` in a Fisher–Yates order drawn from `seed`, and where `correct` ended up.
pub fn shuffle_choices(choices: &[String], correct: usize, seed: u64) -> (Vec<String>, usize) {
    let mut order: Vec<usize> = (0..choices.len()).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let shuffled = order.iter().map(|&k| choices[k].clone()).collect();
    let at = order.iter().position(|&k| k == correct).unwrap_or(0);
    (shuffled, at)
}

/// Sets `choices`, `answer_index`, `answer_letter` and `answer` from canonical options and the
/// correct one, shuffling when asked (the seed derives from `qa_id`, which must be set).
/// How a question type's options are ordered in its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionOrder {
    /// Any order: options are shuffled and an answer moves to another letter by a swap.
    Free,
    /// Every label of a circle (directions), listed around it from any start: an answer moves
    /// to another letter by rotating the list.
    Circle,
    /// A run of neighbours on a circle, listed around it, the answer drawn uniformly into the
    /// run: never moved (moving it would break the run).
    Arc,
    /// Labels on a line (distance bins), listed in order: the answer's letter is its rank and
    /// is never moved.
    Line,
}

impl OptionOrder {
    /// Whether the release may move this type's answers to balance letters.
    pub fn movable(self) -> bool {
        matches!(self, OptionOrder::Free | OptionOrder::Circle)
    }
}

/// The option order of a question type. SIG's direction and distance labels are ordinal: a
/// prompt lists them in order so a reader can tell neighbours apart.
pub fn option_order(family: &str, question_type: &str) -> OptionOrder {
    if family != Family::Sig.name() {
        return OptionOrder::Free;
    }
    match question_type {
        "directional_fill" => OptionOrder::Circle,
        "directional_mc" => OptionOrder::Arc,
        "proximal_fill" | "proximal_mc" => OptionOrder::Line,
        _ => OptionOrder::Free,
    }
}

pub fn set_answer(
    r: &mut QaRecord,
    canonical: &[String],
    correct: usize,
    shuffle: bool,
) -> Result<()> {
    if correct >= canonical.len() || canonical.len() > 26 {
        return Err(schema_err(format!(
            "question {}: correct option {correct} of {} options",
            r.qa_id,
            canonical.len()
        )));
    }
    let (choices, idx) = if shuffle {
        shuffle_choices(canonical, correct, shuffle_seed(&r.qa_id))
    } else {
        (canonical.to_vec(), correct)
    };
    r.answer = choices[idx].clone();
    r.answer_letter = letter(idx).unwrap_or_default();
    r.answer_index = idx as u8;
    r.choices = choices;
    Ok(())
}

/// Per family: how often each letter is the answer, and what uniform shuffling predicts.
#[derive(Debug, Default)]
struct LetterStats {
    observed: [f64; 26],
    expected: [f64; 26],
    variance: [f64; 26],
    count: usize,
}

/// What makes one published row unusable by a reader, if anything: fewer than two options or
/// more than the 26 letters, a key out of range or not the option's own letter, an answer that
/// is not its keyed option, or per-camera lists of different lengths. Every reader of a
/// release (export, view, trace, score, audit) refuses such a row before using it; a release
/// drivegen wrote holds none, so one means the release was edited or damaged.
pub fn row_problem(r: &QaRecord) -> Option<String> {
    let n = r.choices.len();
    let i = usize::from(r.answer_index);
    if !(2..=26).contains(&n) {
        return Some(format!(
            "{n} options; a question has between 2 and 26 (letters A–Z)"
        ));
    }
    if i >= n {
        return Some(format!("the key is option {} of {n}", i + 1));
    }
    if letter(i).as_deref() != Some(r.answer_letter.as_str()) {
        return Some(format!(
            "answer_letter {:?} is not {}, the letter of the keyed option",
            r.answer_letter,
            letter(i).unwrap_or_default()
        ));
    }
    if r.choices[i] != r.answer {
        return Some(format!(
            "the answer {:?} is not the keyed option {:?}",
            r.answer, r.choices[i]
        ));
    }
    if r.cameras.len() != r.camera_frame_ids.len() {
        return Some(format!(
            "{} cameras but {} camera_frame_ids",
            r.cameras.len(),
            r.camera_frame_ids.len()
        ));
    }
    None
}

/// Checks the invariants every family's records must hold: distinct options, an in-range
/// answer equal to its option and letter, unique ids, JSON in the JSON columns, aligned image
/// lists, a known family, and answer letters close to uniform within each family (at most
/// 5 standard deviations plus one from what uniform shuffling gives, for families with at
/// least 100 records). Returns every violation found.
pub fn check_invariants(records: &[QaRecord]) -> std::result::Result<(), Vec<String>> {
    let mut errs = Vec::new();
    let mut ids = BTreeSet::new();
    let mut letters: BTreeMap<&str, LetterStats> = BTreeMap::new();
    for r in records {
        let who = format!("{} ({} {})", r.qa_id, r.family, r.question_type);
        if r.qa_id.is_empty() || !ids.insert(r.qa_id.as_str()) {
            errs.push(format!("{who}: qa_id empty or duplicated"));
        }
        if !FAMILIES.contains(&r.family.as_str()) {
            errs.push(format!("{who}: unknown family"));
        }
        let distinct: BTreeSet<&String> = r.choices.iter().collect();
        if distinct.len() != r.choices.len() || r.choices.len() < 2 {
            errs.push(format!(
                "{who}: choices are not ≥ 2 distinct options: {:?}",
                r.choices
            ));
        }
        let i = r.answer_index as usize;
        match r.choices.get(i) {
            None => errs.push(format!("{who}: answer_index {i} out of range")),
            Some(c) if *c != r.answer => errs.push(format!(
                "{who}: choices[{i}] = {c:?} but answer = {:?}",
                r.answer
            )),
            Some(_) => {}
        }
        if r.choices.iter().filter(|c| **c == r.answer).count() != 1 {
            errs.push(format!(
                "{who}: the answer is not exactly one of the choices"
            ));
        }
        if letter(i).as_deref() != Some(r.answer_letter.as_str()) {
            errs.push(format!(
                "{who}: answer_letter {:?} is not the letter of index {i}",
                r.answer_letter
            ));
        }
        if r.cameras.len() != r.camera_frame_ids.len() {
            errs.push(format!(
                "{who}: {} cameras but {} camera_frame_ids",
                r.cameras.len(),
                r.camera_frame_ids.len()
            ));
        }
        for (name, text) in [
            ("marks", &r.marks),
            ("params", &r.params),
            ("evidence", &r.evidence),
        ] {
            if serde_json::from_str::<serde_json::Value>(text).is_err() {
                errs.push(format!("{who}: {name} is not JSON"));
            }
        }
        if r.frame_idx.is_none() && r.clip_id.is_none() {
            errs.push(format!("{who}: neither frame_idx nor clip_id is set"));
        }
        if r.severity.is_some() && r.corruption.is_none() {
            errs.push(format!("{who}: severity without corruption"));
        }
        if !option_order(&r.family, &r.question_type).movable() {
            // Its letter follows from its place among ordered options, uniform only once the
            // answers are balanced (the release and its blind audit measure what is published).
            continue;
        }
        let k = r.choices.len().clamp(1, 26);
        let e = letters.entry(r.family.as_str()).or_default();
        if i < 26 {
            e.observed[i] += 1.0;
        }
        for l in 0..k {
            let p = 1.0 / k as f64;
            e.expected[l] += p;
            e.variance[l] += p * (1.0 - p);
        }
        e.count += 1;
    }
    for (family, st) in letters {
        let (obs, exp, var) = (&st.observed, &st.expected, &st.variance);
        if st.count < 100 {
            continue;
        }
        for l in 0..26 {
            let tol = 5.0 * var[l].sqrt() + 1.0;
            if (obs[l] - exp[l]).abs() > tol {
                errs.push(format!(
                    "family {family}: letter {} is the answer {} times, {:.1} expected under uniform shuffling (±{tol:.1})",
                    letter(l).unwrap_or_default(),
                    obs[l],
                    exp[l]
                ));
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn family_names_are_the_family_list() {
        assert_eq!(Family::ALL.map(Family::name), FAMILIES);
        for f in Family::ALL {
            assert_eq!(Family::parse(f.name()), Some(f));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.name()));
            assert_eq!(serde_json::from_str::<Family>(&json).unwrap(), f);
        }
        assert_eq!(Family::parse("EgoDyn"), None);
    }

    fn rec(i: usize) -> QaRecord {
        let mut r = QaRecord {
            qa_id: qa_id(
                "egodyn",
                "turn_direction",
                &["nuscenes", "s", &format!("c{i}")],
                None,
                0,
            ),
            family: "egodyn".into(),
            question_type: "turn_direction".into(),
            prompt: Prompt::new(Layout::EgoDyn, "q"),
            source: "nuscenes".into(),
            scene_id: "s".into(),
            clip_id: Some(format!("c{i}")),
            cameras: vec!["CAM_FRONT".into()],
            camera_frame_ids: vec!["t".into()],
            marks: "{}".into(),
            rule: "deadzone_sign".into(),
            params: "{}".into(),
            evidence: "{}".into(),
            ..Default::default()
        };
        let canon: Vec<String> = ["left", "right", "straight"].map(String::from).to_vec();
        set_answer(&mut r, &canon, i % 3, true).unwrap();
        r
    }

    #[test]
    fn roundtrip_and_invariants() {
        let rows: Vec<QaRecord> = (0..600).map(rec).collect();
        check_invariants(&rows).unwrap();
        let b = to_batch(&rows).unwrap();
        assert_eq!(from_batch(&b).unwrap(), rows);
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = qa_id("egodyn", "x", &["a", "b"], None, 1);
        assert_eq!(a, qa_id("egodyn", "x", &["a", "b"], None, 1));
        assert_ne!(a, qa_id("egodyn", "x", &["ab"], None, 1));
        assert_ne!(a, qa_id("egodyn", "x", &["a", "b"], Some("fog"), 1));
        assert_ne!(a, qa_id("egodyn", "x", &["a", "b"], None, 2));
    }

    #[test]
    fn unshuffled_letters_fail_uniformity() {
        let mut rows: Vec<QaRecord> = (0..600).map(rec).collect();
        for r in &mut rows {
            let canon: Vec<String> = ["left", "right", "straight"].map(String::from).to_vec();
            set_answer(r, &canon, 0, false).unwrap();
        }
        assert!(check_invariants(&rows).is_err());
    }
}
