//! The `corrupt` and `bench` commands (kept apart from `cli.rs`/`run.rs` so that other
//! commands' edits and these do not touch the same lines).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use drivegen::corrupt::run::{self as corrupt_run, CorruptOptions, Input};
use drivegen::corrupt::CorruptConfig;
use drivegen::{Error, Result};

/// Corrupt images with the DriveBench corruptions (and write recognition questions).
#[derive(Debug, Args)]
pub struct CorruptArgs {
    /// A folder of PNG/JPEG images (each image is its own frame).
    #[arg(long, conflicts_with = "store")]
    pub images: Option<PathBuf>,
    /// A scene store: its keyframe camera images, 6 views per frame.
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// A corruption name (brightness, dark, snow, fog, rain, water_splash, lens_obstacle,
    /// camera_crash, frame_lost, saturate, motion_blur, zoom_blur, bit_error, color_quant,
    /// h265), a comma-separated list, or `all`.
    #[arg(long, default_value = "all")]
    pub corruption: String,
    /// 1–5, `all`, or `default` (each corruption's DriveBench severity).
    #[arg(long, default_value = "default")]
    pub severity: String,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output folder (or, with --contact-sheet, the sheet's PNG path).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Only the first N frames.
    #[arg(long, value_parser = crate::cli::count)]
    pub max_frames: Option<usize>,
    /// With --store, only the first N keyframes of every scene.
    #[arg(long, value_parser = crate::cli::count)]
    pub frames_per_scene: Option<usize>,
    /// Draw IMG under all 15 corruptions × 5 severities into --out (a PNG).
    #[arg(long, value_name = "IMG")]
    pub contact_sheet: Option<PathBuf>,
    /// Width of one contact-sheet cell in pixels.
    #[arg(long, default_value_t = 320, value_parser = crate::cli::count32)]
    pub cell_width: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    Auto,
    Gpu,
    Cpu,
}

impl From<DeviceArg> for corrupt_run::Device {
    fn from(d: DeviceArg) -> Self {
        match d {
            DeviceArg::Auto => corrupt_run::Device::Auto,
            DeviceArg::Gpu => corrupt_run::Device::Gpu,
            DeviceArg::Cpu => corrupt_run::Device::Cpu,
        }
    }
}

/// Benchmarks.
#[derive(Debug, Args)]
pub struct BenchCorruptArgs {
    #[arg(long, default_value_t = 1600, value_parser = crate::cli::count32)]
    pub width: u32,
    #[arg(long, default_value_t = 900, value_parser = crate::cli::count32)]
    pub height: u32,
    /// Images per GPU measurement.
    #[arg(long, default_value_t = 16, value_parser = crate::cli::count)]
    pub images: usize,
    /// Images per CPU-twin measurement.
    #[arg(long, default_value_t = 2, value_parser = crate::cli::count)]
    pub cpu_images: usize,
    /// The python with imagecorruptions (default: .venv-oracles/bin/python if present).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Skip the CPU twin and the Python reference.
    #[arg(long)]
    pub gpu_only: bool,
    /// Write the Markdown table here too.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn corrupt(a: CorruptArgs) -> Result<ExitCode> {
    let config = CorruptConfig::load(a.config.as_deref())?;
    if let Some(img) = &a.contact_sheet {
        let legend = drivegen::corrupt::sheet::contact_sheet(
            &config,
            img,
            &a.out,
            a.seed,
            a.device.into(),
            a.cell_width,
        )?;
        println!(
            "contact sheet: {} (legend {})",
            a.out.display(),
            legend.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let input = match (a.images, a.store) {
        (Some(d), None) => Input::Images(d),
        (None, Some(s)) => Input::Store(s),
        _ => {
            return Err(Error::Usage(
                "corrupt: give --images DIR or --store STORE (or --contact-sheet IMG)".into(),
            ))
        }
    };
    let opts = CorruptOptions {
        input,
        out: a.out,
        corruptions: corrupt_run::parse_corruptions(&a.corruption)?,
        severities: corrupt_run::parse_severities(&a.severity)?,
        seed: a.seed,
        config,
        device: a.device.into(),
        max_frames: a.max_frames,
        frames_per_scene: a.frames_per_scene,
    };
    print!("{}", corrupt_run::run(&opts)?);
    Ok(ExitCode::SUCCESS)
}

pub fn bench_corrupt(b: BenchCorruptArgs) -> Result<ExitCode> {
    let python = b.python.or_else(|| {
        let p = PathBuf::from(".venv-oracles/bin/python");
        p.exists().then_some(p)
    });
    let opts = drivegen::corrupt::bench::BenchOptions {
        width: b.width,
        height: b.height,
        gpu_images: b.images.max(1),
        cpu_images: b.cpu_images.max(1),
        python: if b.gpu_only { None } else { python },
        cpu: !b.gpu_only,
    };
    let report = drivegen::corrupt::bench::run(&opts)?;
    print!("{report}");
    if let Some(p) = b.report.filter(|p| !drivegen::store::atomic::is_stdout(p)) {
        drivegen::store::atomic::write_report(&p, report.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
