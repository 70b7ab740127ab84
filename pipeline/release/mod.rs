//! The release writer: QA tables → Parquet shards with embedded images, `manifest.json` and a
//! dataset card (`README.md` with the YAML header Hugging Face `datasets` reads).
//!
//! Layout of a release folder:
//!
//! ```text
//! data/{split}-{i:05d}-of-{n:05d}.parquet   QA columns + images (list<struct<bytes, path>>)
//! manifest.json                               options + their hash, input fingerprints,
//!                                             tool version, row counts, sha256 per shard
//! README.md                                   dataset card
//! ```
//!
//! Rows keep the order of the inputs; shards hold `rows_per_shard` rows each. Every file is
//! written to a temporary name and renamed, and no timestamp or host name goes into any file,
//! so the same inputs and options give byte-identical releases, and re-running an interrupted
//! release ends where an uninterrupted one would.

pub mod card;
pub mod shards;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use self::shards::{hex, ImageRef, ShardInfo};
use crate::qa::QaRecord;
use crate::store::atomic::write_atomic;
use crate::store::{CameraRow, Store, Table};
use crate::{Error, Result};

/// How images go into the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageMode {
    /// The encoded file bytes (JPEG/PNG as in the source) plus the path.
    #[default]
    Embed,
    /// Only the path in the source dataset (bytes null).
    Paths,
}

/// What to write.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseOptions {
    pub qa: Vec<PathBuf>,
    /// The scene store the questions come from (maps image ids to files). Without it, rows
    /// carry no images.
    pub store: Option<PathBuf>,
    /// Overrides the store's source root when looking for image files.
    pub images_root: Option<PathBuf>,
    pub out: PathBuf,
    pub split: String,
    pub rows_per_shard: usize,
    pub row_group_rows: usize,
    pub images: ImageMode,
    pub name: String,
}

impl Default for ReleaseOptions {
    fn default() -> Self {
        Self {
            qa: Vec::new(),
            store: None,
            images_root: None,
            out: PathBuf::from("release"),
            split: "test".into(),
            rows_per_shard: 5000,
            row_group_rows: 256,
            images: ImageMode::Embed,
            name: "drivegen release".into(),
        }
    }
}

/// What [`run`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReleaseSummary {
    pub rows: usize,
    pub images: usize,
    pub shards: Vec<ShardInfo>,
    pub counts: BTreeMap<String, BTreeMap<String, usize>>,
    pub options_hash: String,
}

/// Image files by `camera_frame_id`, from the store.
fn image_index(store: &Store) -> Result<BTreeMap<String, String>> {
    let cams: Vec<CameraRow> = store.read_all(Table::Cameras)?;
    Ok(cams
        .into_iter()
        .map(|c| (c.camera_frame_id, c.image_path))
        .collect())
}

/// Where the store's `image_path`s are relative to: `images_root`, else the source root as
/// recorded (absolute, relative to the working folder, or relative to the store's parent).
fn images_root(store: &Store, over: Option<&Path>) -> PathBuf {
    if let Some(r) = over {
        return r.to_path_buf();
    }
    let rec = PathBuf::from(&store.meta().source_root);
    if rec.is_absolute() || rec.is_dir() {
        return rec;
    }
    store
        .dir()
        .parent()
        .map(|p| p.join(&rec))
        .filter(|p| p.is_dir())
        .unwrap_or(rec)
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// Writes the release.
pub fn run(opts: &ReleaseOptions) -> Result<ReleaseSummary> {
    if opts.rows_per_shard == 0 {
        return Err(Error::Usage("rows per shard must be at least 1".into()));
    }
    if opts.split.is_empty()
        || !opts
            .split
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::Usage(format!(
            "split name `{}` must be letters, digits or `_` (datasets derives it from file names)",
            opts.split
        )));
    }
    let rows: Vec<QaRecord> = crate::balance::read_qa(&opts.qa)?;
    let store = opts.store.as_deref().map(Store::open).transpose()?;
    let (index, root) = match &store {
        Some(s) => (image_index(s)?, images_root(s, opts.images_root.as_deref())),
        None => (BTreeMap::new(), PathBuf::new()),
    };
    let n = rows.len().div_ceil(opts.rows_per_shard).max(1);
    let mut shards = Vec::with_capacity(n);
    let mut images_total = 0;
    let pb = crate::progress::bar(n as u64, "release shards");
    for (i, chunk) in rows
        .chunks(opts.rows_per_shard)
        .chain(rows.is_empty().then_some(&rows[..]))
        .enumerate()
    {
        // Images repeat across the questions of one clip or frame: read each once per shard.
        let mut cache: BTreeMap<&str, Arc<Vec<u8>>> = BTreeMap::new();
        let mut images = Vec::with_capacity(chunk.len());
        for r in chunk {
            let mut v = Vec::with_capacity(r.camera_frame_ids.len());
            for id in &r.camera_frame_ids {
                let Some(rel) = index.get(id) else {
                    if store.is_some() {
                        return Err(Error::Input {
                            file: opts.qa.first().cloned().unwrap_or_default(),
                            record: r.qa_id.clone(),
                            detail: format!("image {id} is not in the store's cameras.arrow"),
                        });
                    }
                    continue;
                };
                let bytes = match opts.images {
                    ImageMode::Paths => None,
                    ImageMode::Embed => Some(match cache.get(rel.as_str()) {
                        Some(b) => b.clone(),
                        None => {
                            let p = root.join(rel);
                            let b = Arc::new(std::fs::read(&p).map_err(|e| Error::io(&p, e))?);
                            cache.insert(rel.as_str(), b.clone());
                            b
                        }
                    }),
                };
                v.push(ImageRef {
                    bytes,
                    path: rel.clone(),
                });
            }
            images_total += v.len();
            images.push(v);
        }
        let rel = format!("data/{}-{i:05}-of-{n:05}.parquet", opts.split);
        shards.push(shards::write_shard(
            &opts.out,
            &rel,
            chunk,
            &images,
            opts.row_group_rows,
        )?);
        pb.inc(1);
    }
    pb.finish_and_clear();
    // Shards of an earlier run with a different count would be picked up by `data/test-*`.
    remove_stale_shards(&opts.out, &opts.split, &shards)?;
    // What shapes the files, not where they go: the same release written elsewhere has the
    // same hash.
    let shaping = serde_json::json!({
        "name": opts.name,
        "split": opts.split,
        "rows_per_shard": opts.rows_per_shard,
        "row_group_rows": opts.row_group_rows,
        "images": opts.images,
    });
    let options_json = shaping.to_string();
    let summary = ReleaseSummary {
        rows: rows.len(),
        images: images_total,
        counts: shards::counts(&rows),
        shards,
        options_hash: hex(&Sha256::digest(options_json.as_bytes()))[..16].to_string(),
    };
    let inputs: Vec<serde_json::Value> = opts
        .qa
        .iter()
        .map(|p| {
            Ok(serde_json::json!({
                "file": p.file_name().map(|n| n.to_string_lossy().into_owned()),
                "sha256": sha256_file(p)?,
            }))
        })
        .collect::<Result<_>>()?;
    let manifest = serde_json::json!({
        "tool": "drivegen",
        "tool_version": env!("CARGO_PKG_VERSION"),
        "name": opts.name,
        "split": opts.split,
        "options": {
            "rows_per_shard": opts.rows_per_shard,
            "row_group_rows": opts.row_group_rows,
            "images": opts.images,
        },
        "options_hash": summary.options_hash,
        "inputs": inputs,
        "store": store.as_ref().map(|s| serde_json::json!({
            "source": s.meta().source,
            "source_version": s.meta().source_version,
            "counts": s.meta().counts,
        })),
        "rows": summary.rows,
        "images": summary.images,
        "counts": summary.counts,
        "shards": summary.shards,
    });
    write_atomic(
        &opts.out.join("manifest.json"),
        (serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n").as_bytes(),
    )?;
    write_atomic(
        &opts.out.join("README.md"),
        card::dataset_card(opts, &summary).as_bytes(),
    )?;
    Ok(summary)
}

fn remove_stale_shards(root: &Path, split: &str, keep: &[ShardInfo]) -> Result<()> {
    let dir = root.join("data");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("data/{name}");
        if name.starts_with(&format!("{split}-"))
            && name.ends_with(".parquet")
            && !keep.iter().any(|s| s.path == rel)
        {
            std::fs::remove_file(e.path()).map_err(|err| Error::io(e.path(), err))?;
        }
    }
    Ok(())
}
