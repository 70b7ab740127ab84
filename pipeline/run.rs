//! Turns parsed arguments into library calls. The only bridge between clap and the library.

use std::process::ExitCode;

use drivegen::ingest::nuscenes::{self, IngestOptions, SceneRules};
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;
use drivegen::{Error, Result};

use crate::cli::{CalibrateArgs, Cli, Command, Device, IngestArgs, SourceArg, SynthArgs};

pub fn run(cli: Cli) -> Result<ExitCode> {
    if let Some(n) = cli.threads {
        // Only fails when a pool already exists, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
    match cli.command {
        Command::Synth(a) => synth(a),
        Command::Ingest(a) => ingest(a),
        Command::Egomotion(a) => {
            let summary = drivegen::egomotion::run(&a.store, &a.out, a.config.as_deref())?;
            print!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Calibrate(a) => calibrate(a),
        Command::Visibility(a) => {
            let cfg = drivegen::visibility::config::VisibilityConfig::load(a.config.as_deref())?;
            let rasteriser = rasteriser(a.device)?;
            let summary = drivegen::visibility::run_with(
                &a.store,
                &a.out,
                &cfg,
                rasteriser.as_ref(),
                a.id_maps.as_deref(),
            )?;
            print!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Corrupt(a) => crate::cli_corrupt::corrupt(a),
        Command::Bench(a) => crate::cli_corrupt::bench(a),
        Command::GpuInfo => {
            print!("{}", drivegen::gpu::adapter_report()?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect(a) => {
            print!(
                "{}",
                drivegen::inspect::inspect(&a.path, a.head, a.scene.as_deref())?
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn synth(a: SynthArgs) -> Result<ExitCode> {
    let defaults = SynthOptions::default();
    let opts = SynthOptions {
        scenes: a.scenes,
        seed: a.seed,
        version: a.version,
        duration_s: a.duration.unwrap_or(defaults.duration_s),
        write_sweeps: !a.no_sweeps,
        image_width: a.width.unwrap_or(defaults.image_width),
        image_height: a.height.unwrap_or(defaults.image_height),
        ..defaults
    };
    let summary = drivegen::synth::write_nuscenes(&a.out, &opts)?;
    print!("{summary}");
    Ok(ExitCode::SUCCESS)
}

fn calibrate(a: CalibrateArgs) -> Result<ExitCode> {
    let summary = drivegen::egomotion::calibrate::run(
        &a.store,
        a.config.as_deref(),
        &a.out,
        &a.report,
        a.alpha_sweep,
    )?;
    print!("{summary}");
    Ok(ExitCode::SUCCESS)
}

fn ingest(a: IngestArgs) -> Result<ExitCode> {
    match a.source {
        SourceArg::Nuscenes => {
            let version = match a.version {
                Some(v) => v,
                None => only_version(&a.root)?,
            };
            let opts = IngestOptions {
                root: a.root,
                version,
                out: a.out,
                taxonomy: Taxonomy::load(a.taxonomy.as_deref())?,
                rules: SceneRules {
                    check_images: !a.no_image_check,
                    ..Default::default()
                },
                chunk_scenes: a.chunk,
            };
            let summary = nuscenes::ingest(&opts)?;
            print!("{summary}");
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
    }
}

/// The one version folder (holding `scene.json`) under a nuScenes root.
fn only_version(root: &std::path::Path) -> Result<String> {
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
            "{}: several versions ({}); pick one with --version",
            root.display(),
            v.join(", ")
        ))),
    }
}

/// The z-buffer implementation `--device` asks for.
fn rasteriser(device: Device) -> Result<Box<dyn drivegen::visibility::raster::Rasteriser>> {
    use drivegen::visibility::raster::CpuRasteriser;
    let gpu = || -> Result<Box<dyn drivegen::visibility::raster::Rasteriser>> {
        let gpu = std::sync::Arc::new(drivegen::gpu::Gpu::open()?);
        Ok(Box::new(drivegen::gpu::GpuRasteriser::new(gpu)?))
    };
    match device {
        Device::Cpu => Ok(Box::new(CpuRasteriser)),
        Device::Gpu => gpu(),
        Device::Auto => gpu().or_else(|e| {
            eprintln!("drivegen: no usable GPU ({e}); the z-buffer runs on the CPU twin");
            Ok(Box::new(CpuRasteriser))
        }),
    }
}
