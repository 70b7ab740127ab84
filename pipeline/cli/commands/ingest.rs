//! `drivegen ingest`: read a source dataset into a canonical scene store.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::formats::Format;
use crate::ingest::sources::SourcesConfig;
use crate::ingest::IngestSummary;
use crate::store::paths::Links;
use crate::taxonomy::Taxonomy;
use crate::Result;
use clap::Args;

use crate::cli::args::{count, source_format};

#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// The source format: nuscenes (v1.0 JSON tables + images), waymo (v2 Parquet components;
    /// the root holds `vehicle_pose/`, …), carla (Bench2Drive: a route folder or a folder of
    /// routes) or frenetix (CSV logs, ego only: `<scene>/<Behavior>_logs.csv`).
    #[arg(long, default_value = "nuscenes", value_parser = source_format)]
    pub source: Format,
    /// The dataset root (for nuScenes the dataroot holding `<version>/`).
    #[arg(long)]
    pub root: PathBuf,
    /// The dataset version (nuScenes: the table folder, e.g. v1.0-mini). Default: the only
    /// version folder under the root.
    #[arg(long)]
    pub version: Option<String>,
    /// The store folder to write.
    #[arg(long)]
    pub out: PathBuf,
    /// A taxonomy file replacing `configs/taxonomy.toml`.
    #[arg(long)]
    pub taxonomy: Option<PathBuf>,
    /// Exit non-zero when any scene is rejected.
    #[arg(long)]
    pub strict: bool,
    /// Do not check that every camera image exists.
    #[arg(long)]
    pub no_image_check: bool,
    /// Scenes assembled in parallel at once (bounds memory).
    #[arg(long, default_value_t = crate::ingest::DEFAULT_CHUNK_SCENES, value_parser = count)]
    pub chunk: usize,
    /// Waymo/CARLA/Frenetix ingest rules replacing `configs/sources.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Refuse files that symbolic links under the root lead out of it (for an archive you do
    /// not trust). By default links are followed, as in the devkit layout where `samples/` or
    /// `sweeps/` link to another disk.
    #[arg(long)]
    pub strict_links: bool,
}

impl IngestArgs {
    pub fn run(self) -> Result<ExitCode> {
        let done = crate::ingest::run(&crate::ingest::Options {
            format: self.source,
            root: self.root,
            version: self.version,
            out: self.out,
            taxonomy: Taxonomy::load(self.taxonomy.as_deref())?,
            sources: SourcesConfig::load(self.config.as_deref())?,
            check_images: !self.no_image_check,
            chunk_scenes: self.chunk,
            links: Links::strict_if(self.strict_links),
        })?;
        print!("{}", done.report);
        Ok(outcome(&done.summary, self.strict))
    }
}

/// Names every rejected scene on stderr; exit 1 when nothing was ingested, or with
/// `--strict` when anything was rejected.
fn outcome(summary: &IngestSummary, strict: bool) -> ExitCode {
    for r in &summary.rejects {
        eprintln!(
            "drivegen: rejected scene {}: {}",
            r.scene_id.as_deref().unwrap_or("?"),
            r.reason
        );
    }
    if summary.scenes_written == 0 {
        eprintln!("drivegen: no scene could be ingested");
        return ExitCode::from(1);
    }
    if strict && !summary.rejects.is_empty() {
        eprintln!(
            "drivegen: --strict: {} scenes rejected",
            summary.rejects.len()
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
