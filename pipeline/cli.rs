//! The command line (clap derive only). Nothing below `main.rs`/`run.rs` sees clap: each
//! command's arguments become the library's own option structs in `run.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// drivegen: build vision-language benchmark datasets for autonomous driving.
#[derive(Debug, Parser)]
#[command(name = "drivegen", version, about)]
pub struct Cli {
    /// Worker threads for CPU stages (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// More diagnostics on stderr (-v, -vv).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write the built-in synthetic corpus in the nuScenes v1.0 layout.
    Synth(SynthArgs),
    /// Read a source dataset into a canonical scene store.
    Ingest(IngestArgs),
    /// Summarise a scene store or an Arrow file.
    Inspect(InspectArgs),
    /// Ego motion: 10 Hz kinematics, 3 s clips and the EgoDyn questions of a store.
    Egomotion(EgomotionArgs),
    /// Re-fit the EgoDyn oracle's thresholds to a new vehicle platform's clips.
    Calibrate(CalibrateArgs),
    /// Project every box into every keyframe camera and measure its z-buffer visibility.
    Visibility(VisibilityArgs),
    /// Apply the DriveBench corruptions; write images, corruptions.arrow, corruption_qa.arrow.
    Corrupt(crate::cli_corrupt::CorruptArgs),
    /// Benchmarks (`bench corrupt`).
    Bench(crate::cli_corrupt::BenchArgs),
    /// List the GPU adapters wgpu finds and the one drivegen would use.
    GpuInfo,
}

#[derive(Debug, Args)]
pub struct EgomotionArgs {
    /// The scene store to read.
    #[arg(long)]
    pub store: PathBuf,
    /// Output folder (clips.arrow, egodyn_qa.arrow, egodyn_rejects.jsonl).
    #[arg(long)]
    pub out: PathBuf,
    /// An EgoDyn config replacing `configs/egodyn.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VisibilityArgs {
    /// The scene store to read.
    #[arg(long)]
    pub store: PathBuf,
    /// The table to write (Arrow IPC); rejects go next to it as `<name>.rejects.jsonl`.
    #[arg(long)]
    pub out: PathBuf,
    /// A visibility config replacing `configs/visibility.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Also write every image's instance-ID map as a 16-bit PNG under this folder.
    #[arg(long)]
    pub id_maps: Option<PathBuf>,
    /// Where the z-buffer runs: `gpu`, `cpu` (the plain-Rust twin; same results, bit for bit)
    /// or `auto` (the GPU when an adapter opens, else the CPU, saying so).
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
}

/// Where GPU stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    Auto,
    Gpu,
    Cpu,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The scene store holding the new platform's drives.
    #[arg(long)]
    pub store: PathBuf,
    /// The config to start from (default: the built-in `configs/egodyn.toml`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where to write the recalibrated config (TOML).
    #[arg(long)]
    pub out: PathBuf,
    /// Where to write the Markdown calibration report.
    #[arg(long)]
    pub report: PathBuf,
    /// Sensitivity study over quantile levels, `start:end:step` (e.g. 0.80:0.95:0.05).
    #[arg(long, value_parser = parse_sweep)]
    pub alpha_sweep: Option<(f64, f64, f64)>,
}

fn parse_sweep(s: &str) -> Result<(f64, f64, f64), String> {
    let parts: Vec<&str> = s.split(':').collect();
    let nums: Vec<f64> = parts
        .iter()
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("`{s}`: {e}; expected start:end:step"))?;
    match nums[..] {
        [a, b, c] => Ok((a, b, c)),
        _ => Err(format!("`{s}`: expected start:end:step")),
    }
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Output dataroot (created).
    #[arg(long)]
    pub out: PathBuf,
    /// Number of 20 s scenes.
    #[arg(long, default_value_t = 3)]
    pub scenes: usize,
    /// Seed of the world and everything drawn from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Version folder name written under the dataroot.
    #[arg(long, default_value = "v1.0-mini")]
    pub version: String,
    /// Scene length in seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Skip the ~12 Hz camera sweeps (keyframe images only).
    #[arg(long)]
    pub no_sweeps: bool,
    /// Image width in pixels (default: the nuScenes 1600); the intrinsics scale with it.
    #[arg(long)]
    pub width: Option<u32>,
    /// Image height in pixels (default: the nuScenes 900).
    #[arg(long)]
    pub height: Option<u32>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SourceArg {
    /// nuScenes v1.0 JSON tables + images.
    Nuscenes,
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
    #[arg(long, default_value_t = 8)]
    pub chunk: usize,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A scene store folder, or an Arrow IPC file (`.arrow`).
    pub path: PathBuf,
    /// Print the first N rows of each table.
    #[arg(long, default_value_t = 0)]
    pub head: usize,
    /// Show one scene of a store in detail.
    #[arg(long)]
    pub scene: Option<String>,
}
