//! nuScenes v1.0 ingest: the 13 JSON tables (+ images) → the canonical scene store.
//!
//! The tables are loaded and indexed once; [`crate::ingest::ingest`] then assembles scenes in
//! parallel, a bounded chunk at a time, and writes them in `scene.json` order.

pub(crate) mod chains;
pub(crate) mod load;
pub(crate) mod scene;

use std::path::{Path, PathBuf};

use crate::ingest::limits::Kind;
use crate::ingest::source::{IngestSummary, Refusal, SceneIds, SceneSource};
use crate::store::paths::{Links, Root};
use crate::store::{SceneData, StoreMeta};
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
    /// Whether links under the root are followed out of it.
    pub links: Links,
}

/// Ingests a nuScenes dataroot into a store. Fails only when the tables themselves cannot be
/// read; broken scenes are skipped and listed in the summary and in `rejects.jsonl`.
pub fn ingest(opts: &IngestOptions) -> Result<IngestSummary> {
    let dataset = Root::new(&opts.root, opts.links);
    // Every scene reads the tables: in strict-links mode a table reached through a link out
    // of the root refuses the dataset, not each scene.
    for name in crate::formats::nuscenes::TABLE_NAMES {
        let path = opts.root.join(&opts.version).join(format!("{name}.json"));
        dataset
            .holds(&path)
            .map_err(|why| Error::input(&path, "file", why))?;
    }
    let source = Source {
        tables: load::Tables::load(&opts.root, &opts.version)?,
        dataset,
        opts,
    };
    crate::ingest::ingest(&source, &opts.out, |summary, stats| {
        summary.renormalised_quaternions += stats.renormalised_quaternions;
        for (k, v) in stats.unknown_categories {
            *summary.unknown_categories.entry(k).or_default() += v;
        }
    })
}

/// A dataroot's tables, loaded and indexed once; a unit is a row of `scene.json`.
struct Source<'a> {
    tables: load::Tables,
    dataset: Root,
    opts: &'a IngestOptions,
}

impl SceneSource for Source<'_> {
    type Unit = usize;
    type Stats = scene::SceneStats;

    fn label(&self) -> &'static str {
        "ingest scenes"
    }

    fn root(&self) -> &Path {
        &self.opts.root
    }

    fn meta(&self) -> StoreMeta {
        StoreMeta::new(
            "nuscenes",
            &self.opts.version,
            &self.opts.root.to_string_lossy(),
        )
        .with_links(self.opts.links)
    }

    fn units(&self) -> Result<Vec<usize>> {
        Ok((0..self.tables.scene.rows.len()).collect())
    }

    fn chunk(&self) -> usize {
        self.opts.chunk_scenes
    }

    fn admit(&self, &i: &usize, ids: &mut SceneIds) -> std::result::Result<String, Refusal> {
        let sc = &self.tables.scene.rows[i];
        let id = if sc.name.is_empty() {
            sc.token.clone()
        } else {
            sc.name.clone()
        };
        match ids.admit(&sc.name, &self.tables.scene.file) {
            Ok(()) => Ok(id),
            Err(_) => Err((
                id,
                Error::input(
                    &self.tables.scene.file,
                    &sc.token,
                    format!("duplicate scene name {}", sc.name),
                ),
            )),
        }
    }

    fn assemble(&self, &i: &usize, _id: &str) -> Result<(SceneData, scene::SceneStats)> {
        let o = self.opts;
        scene::assemble(&self.tables, &self.dataset, i, &o.taxonomy, &o.rules)
    }

    fn limit_file(&self, _: &usize, kind: Kind) -> PathBuf {
        let t = &self.tables;
        match kind {
            Kind::EgoPose => t.ego_pose.file.clone(),
            Kind::Camera => t.calibrated_sensor.file.clone(),
            Kind::Object => t.sample_annotation.file.clone(),
        }
    }
}

/// The one version folder (holding `scene.json`) under a nuScenes root.
pub(crate) fn only_version(root: &Path) -> Result<String> {
    let rd = std::fs::read_dir(root).map_err(|e| Error::io(root, e))?;
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("scene.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    match v.len() {
        1 => Ok(v.remove(0)),
        0 => Err(Error::not_found(
            root,
            "nuScenes version folder (one holding scene.json) found; is this the dataroot?",
        )),
        _ => Err(Error::invalid(
            "--version",
            format!(
                "{}: several versions ({}); pick one with --version (input.version in a build \
                 config)",
                root.display(),
                v.join(", ")
            ),
        )),
    }
}
