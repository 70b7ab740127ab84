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
    /// Read a source dataset into a canonical scene store.
    Ingest(IngestArgs),
    /// Summarise a scene store or an Arrow file.
    Inspect(InspectArgs),
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
