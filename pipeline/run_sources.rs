//! `drivegen synth --format waymo-v2|bench2drive|frenetix` and
//! `drivegen ingest --source waymo|carla|frenetix`.

use std::process::ExitCode;

use clap::ValueEnum;
use drivegen::ingest::nuscenes::IngestSummary;
use drivegen::ingest::sources::SourcesConfig;
use drivegen::ingest::{carla, frenetix, waymo};
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;
use drivegen::Result;

use crate::cli::{IngestArgs, SourceArg, SynthArgs};

/// The layouts `drivegen synth` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SynthFormat {
    /// nuScenes v1.0 (13 JSON tables, JPEGs, lidar).
    Nuscenes,
    /// Waymo Open Dataset v2 Parquet components.
    #[value(name = "waymo-v2")]
    WaymoV2,
    /// A Bench2Drive route per scene (gzipped JSON annotations, six JPEG cameras).
    Bench2drive,
    /// Frenetix CSV logs (ego only).
    Frenetix,
}

pub fn synth(a: SynthArgs) -> Result<ExitCode> {
    let defaults = SynthOptions::default();
    let base = SynthOptions {
        scenes: a.scenes,
        seed: a.seed,
        duration_s: a.duration.unwrap_or(defaults.duration_s),
        image_width: a.width.unwrap_or(defaults.image_width),
        image_height: a.height.unwrap_or(defaults.image_height),
        ..defaults
    };
    let summary = match a.format {
        SynthFormat::WaymoV2 => drivegen::synth::waymo::write(
            &a.out,
            &drivegen::synth::waymo::WaymoSynthOptions {
                base,
                ..Default::default()
            },
        )?,
        SynthFormat::Bench2drive => drivegen::synth::bench2drive::write(&a.out, &base)?,
        SynthFormat::Frenetix => drivegen::synth::frenetix::write(&a.out, &base)?,
        SynthFormat::Nuscenes => {
            return Err(drivegen::Error::Usage(
                "synth: the nuScenes format is written by the main synth command".into(),
            ))
        }
    };
    print!("{summary}");
    Ok(ExitCode::SUCCESS)
}

pub fn ingest(a: IngestArgs) -> Result<ExitCode> {
    let config = SourcesConfig::load(a.config.as_deref())?;
    let taxonomy = Taxonomy::load(a.taxonomy.as_deref())?;
    let summary: IngestSummary = match a.source {
        SourceArg::Waymo => {
            let mut config = config;
            config.waymo.check_images &= !a.no_image_check;
            let s = waymo::run(&waymo::Options {
                root: a.root,
                out: a.out,
                taxonomy,
                config,
            })?;
            print!("{s}");
            s.ingest
        }
        SourceArg::Carla => {
            let mut config = config;
            config.carla.check_images &= !a.no_image_check;
            let s = carla::run(&carla::Options {
                root: a.root,
                out: a.out,
                taxonomy,
                config,
            })?;
            print!("{s}");
            s
        }
        SourceArg::Frenetix => {
            let s = frenetix::run(&frenetix::Options {
                root: a.root,
                out: a.out,
                config,
            })?;
            print!("{s}");
            s
        }
        SourceArg::Nuscenes => {
            return Err(drivegen::Error::Usage(
                "ingest: nuScenes is handled by the main ingest command".into(),
            ))
        }
    };
    for r in &summary.rejects {
        eprintln!(
            "drivegen: rejected scene {}: {}",
            r.scene_id.as_deref().unwrap_or("?"),
            r.reason
        );
    }
    if summary.scenes_written == 0 {
        eprintln!("drivegen: no scene could be ingested");
        return Ok(ExitCode::from(1));
    }
    if a.strict && !summary.rejects.is_empty() {
        eprintln!(
            "drivegen: --strict: {} scenes rejected",
            summary.rejects.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
