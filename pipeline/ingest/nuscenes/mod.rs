//! nuScenes v1.0 ingest: the 13 JSON tables (+ images) → the canonical scene store.
//!
//! The tables are loaded and indexed once; scenes are then assembled in parallel, a bounded
//! chunk at a time, and written in `scene.json` order, so memory holds at most one chunk of
//! scenes and the output does not depend on thread timing.

pub mod load;
pub mod scene;
pub mod tables;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::store::rejects::{Reject, RejectLog};
use crate::store::{StoreMeta, StoreWriter};
use crate::taxonomy::Taxonomy;
use crate::{Error, Result};

pub use scene::SceneRules;

/// What to ingest and how.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// The dataroot (holds `<version>/`, `samples/`, `sweeps/`).
    pub root: PathBuf,
    /// e.g. `v1.0-mini`.
    pub version: String,
    /// The store folder to write.
    pub out: PathBuf,
    pub taxonomy: Taxonomy,
    pub rules: SceneRules,
    /// Scenes assembled at once; bounds memory.
    pub chunk_scenes: usize,
}

/// What an ingest did.
#[derive(Debug, Clone, Default)]
pub struct IngestSummary {
    pub scenes_total: usize,
    pub scenes_written: usize,
    pub rejects: Vec<Reject>,
    pub counts: crate::store::Counts,
    pub unknown_categories: BTreeMap<String, u64>,
    pub renormalised_quaternions: u64,
    pub out: PathBuf,
}

impl fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "ingested {}/{} scenes into {}: {} frames, {} ego poses, {} camera images, {} objects",
            self.scenes_written,
            self.scenes_total,
            self.out.display(),
            c.frames,
            c.ego_poses,
            c.camera_images,
            c.objects
        )?;
        if self.renormalised_quaternions > 0 {
            writeln!(
                f,
                "renormalised {} near-unit quaternions",
                self.renormalised_quaternions
            )?;
        }
        for (cat, n) in &self.unknown_categories {
            writeln!(
                f,
                "unknown category {cat:?} ({n} boxes) mapped to the fallback class"
            )?;
        }
        for r in &self.rejects {
            writeln!(
                f,
                "rejected scene {}: {}",
                r.scene_id.as_deref().unwrap_or("?"),
                r.reason
            )?;
        }
        Ok(())
    }
}

/// Ingests a nuScenes dataroot into a store. Fails only when the tables themselves cannot be
/// read; broken scenes are skipped and listed in the summary and in `rejects.jsonl`.
pub fn ingest(opts: &IngestOptions) -> Result<IngestSummary> {
    let tables = load::Tables::load(&opts.root, &opts.version)?;
    let n = tables.scene.rows.len();
    let meta = StoreMeta::new("nuscenes", &opts.version, &opts.root.to_string_lossy());
    crate::store::paths::disjoint(&opts.root, "the dataset root", &opts.out, "the store")?;
    let mut writer = StoreWriter::create(&opts.out, meta)?;
    let mut rejects = RejectLog::new();
    let mut summary = IngestSummary {
        scenes_total: n,
        out: opts.out.clone(),
        ..Default::default()
    };
    let mut seen_names = std::collections::HashSet::new();
    let bar = crate::progress::bar(n as u64, "ingest scenes");
    let chunk = opts.chunk_scenes.max(1);
    for start in (0..n).step_by(chunk) {
        let results: Vec<_> = (start..(start + chunk).min(n))
            .into_par_iter()
            .map(|i| (i, scene::assemble(&tables, i, &opts.taxonomy, &opts.rules)))
            .collect();
        for (i, res) in results {
            let sc = &tables.scene.rows[i];
            let res = res.and_then(|(data, stats)| {
                crate::ingest::limits::check(&data, &|k| match k {
                    crate::ingest::limits::Kind::EgoPose => tables.ego_pose.file.clone(),
                    crate::ingest::limits::Kind::Camera => tables.calibrated_sensor.file.clone(),
                    crate::ingest::limits::Kind::Object => tables.sample_annotation.file.clone(),
                })?;
                if seen_names.insert(sc.name.clone()) {
                    Ok((data, stats))
                } else {
                    Err(Error::input(
                        &tables.scene.file,
                        &sc.token,
                        format!("duplicate scene name {}", sc.name),
                    ))
                }
            });
            match res {
                Ok((data, stats)) => {
                    writer.write_scene(&data)?;
                    summary.scenes_written += 1;
                    summary.renormalised_quaternions += stats.renormalised_quaternions;
                    for (k, v) in stats.unknown_categories {
                        *summary.unknown_categories.entry(k).or_default() += v;
                    }
                }
                Err(e) => rejects.push(scene_reject(sc, &e)),
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let meta = writer.finish(&rejects)?;
    summary.counts = meta.counts;
    summary.rejects = rejects.items().to_vec();
    Ok(summary)
}

fn scene_reject(sc: &tables::Scene, e: &Error) -> Reject {
    let (file, record) = match e {
        Error::Input { file, record, .. } => {
            (Some(file.display().to_string()), Some(record.clone()))
        }
        Error::Json {
            path, line, column, ..
        } => (
            Some(path.display().to_string()),
            Some(format!("{line}:{column}")),
        ),
        Error::Io { path, .. } => (Some(path.display().to_string()), None),
        _ => (None, None),
    };
    Reject {
        stage: "ingest".into(),
        scene_id: Some(if sc.name.is_empty() {
            sc.token.clone()
        } else {
            sc.name.clone()
        }),
        item: None,
        file,
        record,
        reason: e.to_string(),
    }
}

/// The one version folder (holding `scene.json`) under a nuScenes root.
pub fn only_version(root: &Path) -> Result<String> {
    let rd = std::fs::read_dir(root).map_err(|e| Error::io(root, e))?;
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("scene.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    match v.len() {
        1 => Ok(v.remove(0)),
        0 => Err(Error::Usage(format!(
            "{}: no nuScenes version folder (one holding scene.json) found; is this the dataroot?",
            root.display()
        ))),
        _ => Err(Error::Usage(format!(
            "{}: several versions ({}); pick one with --version (input.version in a build config)",
            root.display(),
            v.join(", ")
        ))),
    }
}

/// Whether `root` looks like a nuScenes dataroot for `version`.
pub fn looks_like(root: &Path, version: &str) -> bool {
    root.join(version).join("scene.json").is_file()
}
