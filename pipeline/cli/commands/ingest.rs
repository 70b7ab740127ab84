//! `drivegen ingest`: read a source dataset into a canonical scene store.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use drivegen::config::StageConfig;
use drivegen::ingest::nuscenes::{self, IngestOptions, IngestSummary, SceneRules};
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, frenetix, waymo};
use drivegen::store::paths::Links;
use drivegen::taxonomy::Taxonomy;
use drivegen::Result;

use crate::args::count;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SourceArg {
    /// nuScenes v1.0 JSON tables + images.
    Nuscenes,
    /// Waymo Open Dataset v2 Parquet components (`--root` holds `vehicle_pose/`, …).
    Waymo,
    /// CARLA Bench2Drive routes (`--root` is a route folder or a folder of routes).
    Carla,
    /// Frenetix CSV logs (ego only; `--root` holds `<scene>/<Behavior>_logs.csv`).
    Frenetix,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The source format.
    #[arg(long, value_enum, default_value = "nuscenes")]
    pub source: SourceArg,
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
    #[arg(long, default_value_t = 8, value_parser = count)]
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
        let strict = self.strict;
        let links = Links::strict_if(self.strict_links);
        let summary = match self.source {
            SourceArg::Nuscenes => self.nuscenes()?,
            SourceArg::Waymo => {
                let (taxonomy, config) = self.rules()?;
                let s = waymo::run(&waymo::Options {
                    root: self.root,
                    out: self.out,
                    taxonomy,
                    config,
                    links,
                })?;
                print!("{s}");
                s.ingest
            }
            SourceArg::Carla => {
                let (taxonomy, config) = self.rules()?;
                let s = carla::run(&carla::Options {
                    root: self.root,
                    out: self.out,
                    taxonomy,
                    config,
                    links,
                })?;
                print!("{s}");
                s
            }
            SourceArg::Frenetix => {
                let (_, config) = self.rules()?;
                let s = frenetix::run(&frenetix::Options {
                    root: self.root,
                    out: self.out,
                    config,
                    links,
                })?;
                print!("{s}");
                s
            }
        };
        Ok(outcome(&summary, strict))
    }

    fn nuscenes(self) -> Result<IngestSummary> {
        let version = match self.version {
            Some(v) => v,
            None => nuscenes::only_version(&self.root)?,
        };
        let opts = IngestOptions {
            root: self.root,
            version,
            out: self.out,
            taxonomy: Taxonomy::load(self.taxonomy.as_deref())?,
            rules: SceneRules {
                check_images: !self.no_image_check,
                ..Default::default()
            },
            chunk_scenes: self.chunk,
            links: Links::strict_if(self.strict_links),
        };
        let summary = nuscenes::ingest(&opts)?;
        print!("{summary}");
        Ok(summary)
    }

    /// The Waymo/CARLA/Frenetix rules and the taxonomy, with `--no-image-check` applied.
    fn rules(&self) -> Result<(Taxonomy, SourcesConfig)> {
        let mut config = SourcesConfig::load(self.config.as_deref())?;
        let taxonomy = Taxonomy::load(self.taxonomy.as_deref())?;
        config.waymo.check_images &= !self.no_image_check;
        config.carla.check_images &= !self.no_image_check;
        Ok((taxonomy, config))
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
