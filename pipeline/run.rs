//! Turns parsed arguments into library calls. The only bridge between clap and the library.

use std::process::ExitCode;

use drivegen::ingest::nuscenes::{self, IngestOptions, SceneRules};
use drivegen::synth::SynthOptions;
use drivegen::taxonomy::Taxonomy;
use drivegen::{Error, Result};

use crate::cli::{
    BalanceArgs, BalanceMode, BenchCommand, BenchVisibilityArgs, CalibrateArgs, Cli, Command,
    Device, ImagesArg, IngestArgs, ReleaseArgs, ScoreArgs, SourceArg, SynthArgs,
};

/// The most `--threads` per core.
const THREADS_PER_CORE: usize = 4;

pub fn run(cli: Cli) -> Result<ExitCode> {
    if cli.force {
        drivegen::store::owner::allow_force();
    }
    if let Some(l) = &cli.limits {
        drivegen::config::load_limits(l)?;
    }
    if let Some(n) = cli.threads {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        // More threads than a few per core only adds memory and start-up time.
        let cap = cores * THREADS_PER_CORE;
        let n = if n > cap {
            eprintln!(
                "drivegen: --threads {n} is more than {THREADS_PER_CORE} per core on this \
                 machine's {cores} cores; using {cap}"
            );
            cap
        } else {
            n
        };
        // Only fails when a pool already exists, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    match cli.command {
        Command::Synth(a) => synth(a),
        Command::Ingest(a) => ingest(a),
        Command::Egomotion(a) => {
            let cfg = drivegen::egomotion::config::EgodynConfig::load(a.config.as_deref())?;
            let summary = drivegen::egomotion::run_shard(&a.store, &a.out, cfg, a.shard)?;
            print!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Calibrate(a) => calibrate(a),
        Command::Som(a) => {
            let cfg = drivegen::som::SomConfig::load(a.config.as_deref())?;
            let vis_cfg = drivegen::visibility::config::VisibilityConfig::load(
                a.visibility_config.as_deref(),
            )?;
            let rasteriser = rasteriser(a.device)?;
            let summary = drivegen::som::stage::run(
                &a.store,
                &a.visibility,
                &a.out,
                &cfg,
                &vis_cfg,
                rasteriser.as_ref(),
                a.scene.as_deref(),
            )?;
            print!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
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
        Command::Bench(BenchCommand::Visibility(a)) => bench_visibility(a),
        Command::Balance(a) => balance(a),
        Command::Release(a) => release(a),
        Command::Score(a) => score(a),
        Command::Bench(BenchCommand::Corrupt(b)) => crate::cli_corrupt::bench_corrupt(b),
        Command::Corrupt(a) => crate::cli_corrupt::corrupt(a),
        Command::Build(a) => crate::cli_build::build(a),
        Command::Demo(a) => crate::cli_build::demo(a),
        Command::Stsbench(a) => crate::cli_sts::stsbench(a),
        Command::Sig(a) => crate::cli_sts::sig(a),
        Command::Metavqa(a) => crate::cli_metavqa::metavqa(a),
        Command::Validate(a) => crate::cli_validate::validate(a),
        Command::Audit(a) => crate::cli_audit::audit(a),
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
    if !matches!(a.format, crate::run_sources::SynthFormat::Nuscenes) {
        return crate::run_sources::synth(a);
    }
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
                None => nuscenes::only_version(&a.root)?,
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
        SourceArg::Waymo | SourceArg::Carla | SourceArg::Frenetix => crate::run_sources::ingest(a),
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

fn bench_visibility(a: BenchVisibilityArgs) -> Result<ExitCode> {
    use drivegen::bench::visibility as vb;
    let b = vb::VisibilityBench {
        frames: a.frames.max(1),
        boxes: a.boxes,
        width: a.width,
        height: a.height,
        seed: a.seed,
        repeats: a.repeats,
    };
    let frames = vb::frames(&b);
    let mut rows = Vec::new();
    let mut device = "none".to_string();
    let mut totals = Vec::new();
    if a.device != Device::Cpu {
        match drivegen::gpu::Gpu::open() {
            Ok(gpu) => {
                device = gpu.info().to_string();
                let r = drivegen::gpu::GpuRasteriser::new(std::sync::Arc::new(gpu))?;
                let (t, v) = vb::time_rasteriser(&frames, &r, b.repeats)?;
                eprintln!("gpu: {:.1} frames/s", t.frames_per_s());
                rows.push(t);
                totals.push(v);
            }
            Err(e) if a.device == Device::Auto => eprintln!("drivegen: no GPU ({e}); CPU only"),
            Err(e) => return Err(e),
        }
    }
    if a.device != Device::Gpu {
        let (mut t, v) = vb::time_rasteriser(
            &frames,
            &drivegen::visibility::raster::CpuRasteriser,
            b.repeats,
        )?;
        t.what = format!("cpu twin ({} threads)", rayon::current_num_threads());
        eprintln!("cpu: {:.1} frames/s", t.frames_per_s());
        rows.push(t);
        totals.push(v);
    }
    if totals.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::Gpu {
            kernel: "zbuffer".into(),
            detail: format!(
                "GPU and CPU disagree on the benchmark frames: visible pixels {totals:?}"
            ),
        });
    }
    let python = match a.python.as_deref() {
        Some("none") => None,
        Some(p) => Some(std::path::PathBuf::from(p)),
        None => {
            let p = std::path::Path::new(".venv-devkit/bin/python");
            p.is_file().then(|| p.to_path_buf())
        }
    };
    let reference = match python {
        Some(py) => {
            let n = a.python_frames.clamp(1, frames.len());
            let file = std::env::temp_dir()
                .join(format!("drivegen-bench-vis-{}.json", std::process::id()));
            vb::export(&frames[..n], &file)?;
            let r = vb::run_reference(&py, &vb::reference_script(), &file);
            let _ = std::fs::remove_file(&file);
            Some((r?, n))
        }
        None => None,
    };
    print!("{}", vb::table(&b, &device, &rows, reference));
    Ok(ExitCode::SUCCESS)
}

fn balance(a: BalanceArgs) -> Result<ExitCode> {
    use drivegen::balance::{self, greedy};
    let opts = balance::BalanceOptions {
        spec: greedy::BalanceSpec {
            target: a.target,
            source_caps: a.caps.into_iter().collect(),
            targets: Default::default(),
            mode: match a.mode {
                BalanceMode::Paper => greedy::Mode::Paper,
                BalanceMode::Released => greedy::Mode::Released,
            },
        },
        type_cap: a.type_cap,
        balance_letters: a.balance_letters,
        answer_ratio: a.answer_ratio,
        max_rows: a.max_rows,
        max_blind_excess: a.max_blind_excess,
    };
    let o = balance::run(&a.qa, &a.out, &opts)?;
    println!(
        "balance: {} items → {} selected ({} rows) in {}; {} fallback steps, shortfall {}",
        o.items_in,
        o.selection.chosen.len(),
        o.rows,
        a.out.display(),
        o.selection.fallbacks,
        o.selection.shortfall
    );
    println!(
        "  majority-answer accuracy {:.3} → {:.3}; report in {}",
        o.before.overall_majority_accuracy(),
        o.after.overall_majority_accuracy(),
        a.out.join("balance_report.md").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn release(a: ReleaseArgs) -> Result<ExitCode> {
    use drivegen::release::{self, ImageMode, ReleaseOptions};
    let opts = ReleaseOptions {
        qa: a.qa,
        stores: a.store,
        images_root: a.images_root,
        out: a.out,
        split: a.split,
        rows_per_shard: a.rows_per_shard,
        row_group_rows: a.row_group_rows,
        row_group_bytes: a.row_group_mib.max(1) << 20,
        images: match a.images {
            ImagesArg::Embed => ImageMode::Embed,
            ImagesArg::Paths => ImageMode::Paths,
        },
        name: a.name,
        image_dirs: a.image_dirs,
        text_only_controls: a.text_only_controls,
    };
    let s = release::run(&opts)?;
    println!(
        "release: {} rows, {} images, {} shards in {} (options {})",
        s.rows,
        s.images,
        s.shards.len(),
        opts.out.display(),
        s.options_hash
    );
    Ok(ExitCode::SUCCESS)
}

fn score(a: ScoreArgs) -> Result<ExitCode> {
    use drivegen::score;
    if let Some(code) = crate::cli_sts::score_sig(&a.sig, a.out.as_deref())? {
        return Ok(code);
    }
    let (Some(release), Some(preds)) = (&a.release, &a.predictions) else {
        return Err(Error::Usage(
            "score: give --release and --predictions (or --sig-pred and --sig-truth)".into(),
        ));
    };
    let to_stdout = a
        .out
        .as_deref()
        .is_some_and(drivegen::store::atomic::is_stdout);
    if let Some(out) = a.out.as_deref().filter(|_| !to_stdout) {
        drivegen::store::paths::disjoint(preds, "--predictions", out, "--out")?;
        drivegen::store::owner::file_output(out)?;
    }
    let questions = score::read_release_splits(release, !a.no_verify)?;
    let predictions = score::read_predictions(preds)?;
    let report = score::score_release(&questions, &predictions, a.split.as_deref())?;
    if let Some(out) = &a.out {
        let json = serde_json::to_string_pretty(&report).map_err(|e| Error::Config {
            file: out.clone(),
            detail: e.to_string(),
        })?;
        drivegen::store::atomic::write_report(out, (json + "\n").as_bytes())?;
    }
    // With `--out -` standard output holds the JSON alone.
    let summary = score::release_summary(&report);
    if to_stdout {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}
