//! Ingest: source datasets → the canonical scene store.
//!
//! [`run`] is the one entry point (the CLI's `drivegen ingest` and the build both call it): it
//! picks the format's reader, and every reader feeds the same loop ([`source::ingest`]). What a
//! layout looks like on disk is in [`crate::formats`]; here is only how it becomes store rows.

use std::path::PathBuf;

use crate::formats::Format;
use crate::store::paths::Links;
use crate::taxonomy::Taxonomy;
use crate::Result;

pub mod nuscenes;

pub mod carla;
pub mod frenetix;
pub(crate) mod limits;
pub(crate) mod source;
pub mod sources;
pub mod waymo;

pub use source::{ingest, reject, utf8_name, IngestSummary, SceneIds, SceneSource};

/// Scenes assembled at once by default (bounds memory).
pub(crate) const DEFAULT_CHUNK_SCENES: usize = 8;

/// What to ingest and how, for any format.
#[derive(Debug, Clone)]
pub struct Options {
    pub format: Format,
    /// The dataset root (for nuScenes the dataroot holding `<version>/`).
    pub root: PathBuf,
    /// The nuScenes table folder (e.g. `v1.0-mini`); `None` takes the only one under the root.
    /// Other formats have no versions and ignore it.
    pub version: Option<String>,
    /// The store folder to write.
    pub out: PathBuf,
    /// Source classes → store classes (Frenetix logs hold no objects and ignore it).
    pub taxonomy: Taxonomy,
    /// The Waymo, CARLA and Frenetix rules (`configs/sources.toml`).
    pub sources: sources::SourcesConfig,
    /// Whether every camera image must exist (off: trust the tables).
    pub check_images: bool,
    /// nuScenes scenes assembled in parallel at once.
    pub chunk_scenes: usize,
    /// Whether links under the root are followed out of it.
    pub links: Links,
}

/// What an ingest did: the common summary, and everything the format has to say (the
/// common summary's lines included) for a person to read.
#[derive(Debug, Clone)]
pub struct Ingested {
    pub summary: IngestSummary,
    pub report: String,
}

/// Ingests one dataset root into a store. Fails only when the dataset as a whole cannot be
/// read; broken scenes are skipped, listed in the summary and in `rejects.jsonl`.
pub fn run(req: &Options) -> Result<Ingested> {
    let mut sources = req.sources.clone();
    sources.waymo.check_images &= req.check_images;
    sources.carla.check_images &= req.check_images;
    let (summary, report) = match req.format {
        Format::Nuscenes => {
            let version = match &req.version {
                Some(v) => v.clone(),
                None => nuscenes::only_version(&req.root)?,
            };
            let s = nuscenes::ingest(&nuscenes::IngestOptions {
                root: req.root.clone(),
                version,
                out: req.out.clone(),
                taxonomy: req.taxonomy.clone(),
                rules: nuscenes::SceneRules {
                    check_images: req.check_images,
                    ..Default::default()
                },
                chunk_scenes: req.chunk_scenes,
                links: req.links,
            })?;
            let report = s.to_string();
            (s, report)
        }
        Format::WaymoV2 => {
            let s = waymo::run(&waymo::Options {
                root: req.root.clone(),
                out: req.out.clone(),
                taxonomy: req.taxonomy.clone(),
                config: sources,
                links: req.links,
            })?;
            let report = s.to_string();
            (s.ingest, report)
        }
        Format::Bench2drive => {
            let s = carla::run(&carla::Options {
                root: req.root.clone(),
                out: req.out.clone(),
                taxonomy: req.taxonomy.clone(),
                config: sources,
                links: req.links,
            })?;
            let report = s.to_string();
            (s, report)
        }
        Format::Frenetix => {
            let s = frenetix::run(&frenetix::Options {
                root: req.root.clone(),
                out: req.out.clone(),
                config: sources,
                links: req.links,
            })?;
            let report = s.to_string();
            (s, report)
        }
    };
    Ok(Ingested { summary, report })
}
