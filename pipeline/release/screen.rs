//! The release's first pass: counts the rows and drops those that would publish an unusable
//! image (an empty, truncated or undecodable file, or a picture of another size than its
//! camera row says), each recorded with its file in the release's `rejects.jsonl`; then places
//! the correct options of the rows it keeps so that answer letters are uniform in the release
//! as published (dropping rows after balancing would otherwise tilt them).
//!
//! Every image a row shows is decoded once per scene (rows come scene by scene, so the cache of
//! verdicts is cleared at each new scene and memory does not grow with the dataset); the
//! decoding runs on the CPU pool a block of rows at a time.

use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use rayon::prelude::*;

use super::{ImageFinder, ImageMode, Options, Shown};
use crate::balance::letters::{Letters, Moves};
use crate::qa::QaRecord;
use crate::store::rejects::{Reject, RejectLog};
use crate::Result;

/// Rows whose new images are decoded together.
const BLOCK_ROWS: usize = 256;

/// What the first pass found.
pub(crate) struct Screened {
    /// Rows to publish.
    pub kept: usize,
    /// Rows to publish per family: each family's shards are files of their own.
    pub families: BTreeMap<String, usize>,
    /// The (table, record batch) pairs holding each family's rows, in order: a family's
    /// shards are written from those batches only.
    pub batches: BTreeMap<String, BTreeSet<(usize, usize)>>,
    /// `qa_id`s of the rows left out.
    pub dropped: BTreeSet<String>,
    pub rejects: RejectLog,
    /// Where the correct option of each row goes, by family and read position.
    pub moves: Moves,
    /// The kept rows of the families robustness splits re-ask, to draw from.
    pub pool: crate::robustness::select::Pool,
    /// Those families.
    robust: Vec<String>,
    /// What placing the letters needs of each row, until they are placed.
    letters: Letters,
}

/// 128 bits of the hash of a `qa_id`: a few MB for millions of rows, and no false alarm in
/// practice.
pub(crate) fn id_key(qa_id: &str) -> u128 {
    let h = sha2::Sha256::digest(qa_id.as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&h[..16]);
    u128::from_le_bytes(key)
}

/// Why an image cannot be published, if it cannot.
pub(crate) fn unusable(bytes: &[u8], size: (u32, u32)) -> Option<String> {
    crate::images::decode_checked(bytes, Some(size)).err()
}

struct Pending {
    record: QaRecord,
    /// (source, camera frame id) of each image shown.
    images: Vec<(PathBuf, String)>,
}

pub(super) fn screen(opts: &Options, finder: &ImageFinder<'_>) -> Result<Screened> {
    let mut out = Screened {
        kept: 0,
        families: BTreeMap::new(),
        batches: BTreeMap::new(),
        dropped: BTreeSet::new(),
        rejects: RejectLog::new(),
        moves: Moves::default(),
        pool: Default::default(),
        robust: opts
            .robustness
            .as_ref()
            .map(|r| r.families.clone())
            .unwrap_or_default(),
        letters: Letters::default(),
    };
    let check = opts.images == ImageMode::Embed;
    let mut verdicts: HashMap<PathBuf, Option<(PathBuf, String)>> = HashMap::new();
    let mut block: Vec<Pending> = Vec::new();
    let mut todo: Vec<Shown<'_>> = Vec::new();
    let mut scene = String::new();
    let mut rows = crate::qa::ipc::rows(&opts.qa);
    while let Some(r) = rows.next() {
        let r: QaRecord = r?;
        let table = || rows.current_file().map(PathBuf::from).unwrap_or_default();
        // The family names the row's shard files and its config on the dataset card.
        if !crate::qa::record::FAMILIES.contains(&r.family.as_str()) {
            return Err(crate::Error::input(
                table(),
                &r.qa_id,
                format!(
                    "question {} has family `{}`, not one of {}",
                    r.qa_id,
                    r.family,
                    crate::qa::record::FAMILIES.join(", ")
                ),
            ));
        }
        out.batches
            .entry(r.family.clone())
            .or_default()
            .insert(rows.position());
        if !check {
            out.keep(&r);
            continue;
        }
        if r.scene_id != scene || block.len() >= BLOCK_ROWS {
            settle(&mut block, &mut todo, &mut verdicts, &mut out);
            if r.scene_id != scene {
                verdicts.clear();
                scene.clone_from(&r.scene_id);
            }
        }
        let shown = finder.images(&r)?;
        let mut images = Vec::with_capacity(shown.len());
        for (k, im) in shown.into_iter().enumerate() {
            let source = im.source();
            let id = r.camera_frame_ids.get(k).cloned().unwrap_or_default();
            // Queued images hold `None` until `settle` decodes them.
            if let std::collections::hash_map::Entry::Vacant(e) = verdicts.entry(source.clone()) {
                e.insert(None);
                todo.push(im);
            }
            images.push((source, id));
        }
        block.push(Pending { record: r, images });
    }
    settle(&mut block, &mut todo, &mut verdicts, &mut out);
    // The release holds none of this while it writes, only the moves.
    out.moves = match std::mem::take(&mut out.letters).finish() {
        Ok(moves) => moves,
        Err(qa_id) => return Err(twice(opts, &qa_id)),
    };
    Ok(out)
}

/// The error for a `qa_id` read twice, naming the table of its second row: found by reading
/// the tables again, which only this error pays for.
fn twice(opts: &Options, qa_id: &str) -> crate::Error {
    let files: Vec<String> = opts.qa.iter().map(|p| p.display().to_string()).collect();
    let mut table = opts.qa.first().cloned().unwrap_or_default();
    let mut seen = false;
    let mut rows = crate::qa::ipc::rows(&opts.qa);
    while let Some(Ok(r)) = rows.next() {
        if r.qa_id == qa_id {
            table = rows.current_file().map(PathBuf::from).unwrap_or_default();
            if seen {
                break;
            }
            seen = true;
        }
    }
    crate::Error::input(
        table,
        qa_id,
        format!(
            "qa_id {qa_id} appears twice among the QA tables ({}): a table given twice, or \
             tables of two builds; a release needs unique ids",
            files.join(", ")
        ),
    )
}

impl Screened {
    fn keep(&mut self, r: &QaRecord) {
        self.letters.push(r);
        self.kept += 1;
        if self.robust.contains(&r.family) {
            let key = id_key(&r.qa_id);
            self.pool.add(&r.family, &r.question_type, &r.answer, key);
        }
        *self.families.entry(r.family.clone()).or_default() += 1;
    }
}

/// Decodes the block's new images and decides its rows.
fn settle(
    block: &mut Vec<Pending>,
    todo: &mut Vec<Shown<'_>>,
    verdicts: &mut HashMap<PathBuf, Option<(PathBuf, String)>>,
    out: &mut Screened,
) {
    let found: Vec<(PathBuf, Option<(PathBuf, String)>)> = todo
        .par_iter()
        .map(|im| {
            let why = match im.read() {
                Ok(bytes) => unusable(&bytes, im.size),
                Err(e) => Some(e.report().to_string()),
            };
            (im.source(), why.map(|w| (im.file(), w)))
        })
        .collect();
    verdicts.extend(found);
    todo.clear();
    for p in block.drain(..) {
        let bad = p.images.iter().find_map(|(src, id)| {
            verdicts
                .get(src)
                .cloned()
                .flatten()
                .map(|(f, w)| (f, id, w))
        });
        match bad {
            None => out.keep(&p.record),
            Some((src, id, why)) => {
                let r = &p.record;
                out.rejects.push(Reject {
                    stage: "release".into(),
                    scene_id: Some(r.scene_id.clone()),
                    item: Some(r.qa_id.clone()),
                    file: Some(src.display().to_string()),
                    record: Some(id.clone()),
                    reason: format!("question {} not published: {why}", r.qa_id),
                });
                out.letters.push_left_out(r);
                out.dropped.insert(r.qa_id.clone());
            }
        }
    }
}
