//! The command line (clap derive only). Nothing below `main.rs`/`run.rs` sees clap: each
//! command's arguments become the library's own option structs in `run.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A count flag that must be at least 1: zero would run and write nothing, with exit 0.
pub fn count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// [`count`] for 32-bit flags (image sizes, per-frame counts, shard counts).
pub fn count32(s: &str) -> Result<u32, String> {
    let n = count(s)?;
    u32::try_from(n).map_err(|_| format!("must be at most {}", u32::MAX))
}

fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|e| format!("not a number: {e}"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err("must be a finite number".into())
    }
}

/// A finite number above zero (a duration).
pub fn positive(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err("must be above 0".into())
    }
}

/// A finite fraction in [0, 1] (a margin of accuracy over chance).
pub fn fraction(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be between 0 and 1".into())
    }
}

/// A finite ratio of at least 1 (the most to the fewest answers of a question type).
pub fn ratio(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v >= 1.0 {
        Ok(v)
    } else {
        Err("must be at least 1".into())
    }
}

/// drivegen: build vision-language benchmark datasets for autonomous driving.
#[derive(Debug, Parser)]
#[command(name = "drivegen", version, about)]
pub struct Cli {
    /// Worker threads for CPU stages (default: all cores).
    #[arg(long, global = true, value_parser = count)]
    pub threads: Option<usize>,
    /// Write into an output folder that holds files drivegen did not write (naming them),
    /// and replace an output file drivegen did not write. Without it such outputs are refused.
    #[arg(long, global = true)]
    pub force: bool,
    /// A TOML file of input limits (`configs/limits.toml` lists the keys and their defaults):
    /// the most drivegen reads of one file, line, image or Parquet chunk before it stops.
    #[arg(long, global = true, value_name = "FILE")]
    pub limits: Option<PathBuf>,
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
    /// Draw Set-of-Mark boxes and numbered labels into the keyframe images with kept objects.
    Som(SomArgs),
    /// Apply the DriveBench corruptions; write images, corruptions.arrow, corruption_qa.arrow.
    Corrupt(crate::cli_corrupt::CorruptArgs),
    /// List the GPU adapters wgpu finds and the one drivegen would use.
    GpuInfo,
    /// Balance question tables: EgoDyn's greedy Algorithm 1 over clips/frames, source and
    /// per-type caps, answer-letter balancing; writes the kept rows and a report.
    Balance(BalanceArgs),
    /// Write a release: Parquet shards (QA columns + embedded images) in the Hugging Face
    /// layout, manifest.json and a dataset card.
    Release(ReleaseArgs),
    /// Score a model's answers against a release (parsing, accuracy, balanced accuracy,
    /// macro-F1, EgoDyn's consistency metrics).
    Score(ScoreArgs),
    /// Build a release from a build config: every stage, balancing, Parquet shards, a report;
    /// resumable, and shardable over machines (--shard i/N, then --merge N).
    Build(crate::cli_build::BuildArgs),
    /// Synthesise the built-in corpus and build the everything-config into ./demo-release.
    Demo(crate::cli_build::DemoArgs),
    /// Measure a stage's throughput (GPU, CPU twin, Python reference) and print a table.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Mine STSBench scenarios (tracks + map) and write stsbench_qa.arrow.
    Stsbench(crate::cli_sts::StsbenchArgs),
    /// Build SIG bird's-eye grids per kept camera image; write sig_frames.arrow and sig_qa.arrow.
    Sig(crate::cli_sts::SigArgs),
    /// MetaVQA questions on Set-of-Mark images: metavqa_qa.arrow, rollouts.json, images/.
    Metavqa(crate::cli_metavqa::MetavqaArgs),
    /// Check a release as users get it: every answer key against its prompt, every image,
    /// ids, control splits, letter balance, the manifest and the card. Exit 1 on a violation.
    Validate(crate::cli_validate::ValidateArgs),
    /// Blind baselines of a release (letter prior, answer prior per template, question-only
    /// classifier), fitted and scored on different scenes, beside chance.
    Audit(crate::cli_audit::AuditArgs),
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Camera-frames/s of projection + z-buffer at 1600×900 with ~50 boxes.
    Visibility(BenchVisibilityArgs),
    /// Images/s per corruption at 1600×900: GPU kernels, GPU with JPEG decode/encode, the CPU
    /// twin, and imagecorruptions (benches/reference/corrupt.py) where it is installed.
    Corrupt(crate::cli_corrupt::BenchCorruptArgs),
}

#[derive(Debug, Args)]
pub struct BenchVisibilityArgs {
    /// Camera frames per timed run.
    #[arg(long, default_value_t = 256, value_parser = count)]
    pub frames: usize,
    /// Boxes around the ego per frame.
    #[arg(long, default_value_t = 50)]
    pub boxes: usize,
    #[arg(long, default_value_t = 1600, value_parser = count32)]
    pub width: u32,
    #[arg(long, default_value_t = 900, value_parser = count32)]
    pub height: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Timed repetitions (the best counts).
    #[arg(long, default_value_t = 3, value_parser = count)]
    pub repeats: usize,
    /// Which implementations to time: `gpu`, `cpu` or `auto` (both, the GPU if it opens).
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    /// Python with nuscenes-devkit for MetaVQA's method (default: `.venv-devkit/bin/python`
    /// when it exists); `none` skips it.
    #[arg(long)]
    pub python: Option<String>,
    /// Frames given to the Python reference (it is slow; its rate is per frame).
    #[arg(long, default_value_t = 64, value_parser = count)]
    pub python_frames: usize,
}

#[derive(Debug, Args)]
pub struct SomArgs {
    /// The scene store to read (its source root holds the camera images).
    #[arg(long)]
    pub store: PathBuf,
    /// The visibility table of that store (`drivegen visibility --out`).
    #[arg(long)]
    pub visibility: PathBuf,
    /// Output folder: `<scene_id>/<camera_frame_id>.png` and `marks.arrow`.
    #[arg(long)]
    pub out: PathBuf,
    /// A Set-of-Mark config replacing `configs/som.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The visibility config the table was made with, when not the built-in one.
    #[arg(long)]
    pub visibility_config: Option<PathBuf>,
    /// Where the z-buffer, distance transform and drawing run (as for `visibility`).
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    /// Only this scene.
    #[arg(long)]
    pub scene: Option<String>,
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
    /// Only the scenes of shard i of N (0-based; a scene's shard is a hash of its id), so
    /// N machines can share the work; `balance` merges the shards' QA tables.
    #[arg(long, default_value = "0/1")]
    pub shard: drivegen::shard::Shard,
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
    #[arg(long, default_value_t = 3, value_parser = count)]
    pub scenes: usize,
    /// Seed of the world and everything drawn from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Version folder name written under the dataroot.
    #[arg(long, default_value = "v1.0-mini")]
    pub version: String,
    /// Scene length in seconds.
    #[arg(long, value_parser = positive)]
    pub duration: Option<f64>,
    /// Skip the ~12 Hz camera sweeps (keyframe images only).
    #[arg(long)]
    pub no_sweeps: bool,
    /// Image width in pixels (default: the nuScenes 1600); the intrinsics scale with it.
    #[arg(long, value_parser = count32)]
    pub width: Option<u32>,
    /// Image height in pixels (default: the nuScenes 900).
    #[arg(long, value_parser = count32)]
    pub height: Option<u32>,
    /// The layout to write the synthetic world in.
    #[arg(long, value_enum, default_value = "nuscenes")]
    pub format: crate::run_sources::SynthFormat,
}

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

#[derive(Debug, Args)]
pub struct BalanceArgs {
    /// QA tables to balance (Arrow IPC, the common QA record); repeat for several.
    #[arg(long = "qa", required = true)]
    pub qa: Vec<PathBuf>,
    /// Output folder (balanced_qa.arrow, balance_report.md, balance_report.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Items (clips or frames) to select.
    #[arg(long, value_parser = count)]
    pub target: usize,
    /// A source cap, `SOURCE=N` (repeatable), e.g. `nuscenes=500`.
    #[arg(long = "cap", value_parser = parse_cap)]
    pub caps: Vec<(String, usize)>,
    /// `paper` (joint argmax of the deficit, Algorithm 1) or `released` (the public code's
    /// question-first choice).
    #[arg(long, value_enum, default_value_t = BalanceMode::Paper)]
    pub mode: BalanceMode,
    /// Keep at most N questions per (family, type).
    #[arg(long, value_parser = count)]
    pub type_cap: Option<usize>,
    /// Make answer letters uniform within every (family, type).
    #[arg(long)]
    pub balance_letters: bool,
    /// No answer of a (family, type) keeps more than this many times the rows of its rarest
    /// answer (1 is uniform).
    #[arg(long, value_parser = ratio)]
    pub answer_ratio: Option<f64>,
    /// At most this many rows, taken evenly over (type, answer).
    #[arg(long, value_parser = count)]
    pub max_rows: Option<usize>,
    /// Drop rows blind baselines answer without the image until the best one is within this
    /// margin of chance (dropped rows in blind_filter.jsonl).
    #[arg(long, value_parser = fraction)]
    pub max_blind_excess: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BalanceMode {
    Paper,
    Released,
}

fn parse_cap(s: &str) -> Result<(String, usize), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected SOURCE=N"))?;
    let n = v
        .trim()
        .parse()
        .map_err(|e| format!("`{s}`: {v} is not a count: {e}"))?;
    Ok((k.trim().to_string(), n))
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// QA tables to publish (Arrow IPC, the common QA record), in order; repeatable.
    #[arg(long = "qa", required = true)]
    pub qa: Vec<PathBuf>,
    /// The scene store the questions were built from (finds the images); repeatable (the
    /// shards of a sharded build).
    #[arg(long)]
    pub store: Vec<PathBuf>,
    /// Where the store's image paths are relative to, if not its recorded source root.
    #[arg(long)]
    pub images_root: Option<PathBuf>,
    /// The release folder.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value = "test")]
    pub split: String,
    #[arg(long, default_value_t = 5000, value_parser = count)]
    pub rows_per_shard: usize,
    #[arg(long, default_value_t = 256, value_parser = count)]
    pub row_group_rows: usize,
    /// A row group also ends once its distinct images reach this many MiB (bounds memory).
    #[arg(long, default_value_t = 16, value_parser = count)]
    pub row_group_mib: usize,
    /// `embed` the image files or publish `paths` only.
    #[arg(long, value_enum, default_value_t = ImagesArg::Embed)]
    pub images: ImagesArg,
    /// The dataset's name on its card.
    #[arg(long, default_value = "drivegen release")]
    pub name: String,
    /// A folder that rows' `image_paths` are relative to (a `corrupt` or `metavqa` output
    /// folder); repeatable, searched in order.
    #[arg(long = "image-dir")]
    pub image_dirs: Vec<PathBuf>,
    /// Also write every question with black images into the split `{split}_text_only`.
    #[arg(long)]
    pub text_only_controls: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImagesArg {
    Embed,
    Paths,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The release folder (reads the shards manifest.json lists).
    #[arg(long, required_unless_present = "sig_pred")]
    pub release: Option<PathBuf>,
    /// JSON lines `{"qa_id": ..., "prediction": ..., "split": ...}` (`split` optional).
    #[arg(long, required_unless_present = "sig_pred")]
    pub predictions: Option<PathBuf>,
    /// The split that predictions naming none answer (default: the release's main split; the
    /// text-only control is `<split>_text_only`).
    #[arg(long)]
    pub split: Option<String>,
    /// Read shards whose sha256 no longer matches manifest.json (edited by hand), and ignore
    /// Parquet files in data/ that it does not list.
    #[arg(long)]
    pub no_verify: bool,
    #[command(flatten)]
    pub sig: crate::cli_sts::SigScoreArgs,
    /// Write the full report as JSON here (`-`: standard output, the summary then goes to
    /// standard error).
    #[arg(long)]
    pub out: Option<PathBuf>,
}
