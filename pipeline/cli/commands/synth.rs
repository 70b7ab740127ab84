//! `drivegen synth`: the built-in synthetic corpus, in any of the source layouts drivegen
//! ingests.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::formats::Format;
use crate::synth::SynthOptions;
use crate::Result;
use clap::Args;

use crate::cli::args::{count, count32, positive, source_format};

#[derive(Debug, Args)]
pub(crate) struct SynthArgs {
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
    /// nuscenes (13 JSON tables, JPEGs, lidar), waymo-v2 (Parquet components), bench2drive (a
    /// route per scene: gzipped JSON annotations, six JPEG cameras) or frenetix (CSV logs, ego
    /// only).
    #[arg(long, default_value = "nuscenes", value_parser = source_format)]
    pub format: Format,
}

impl SynthArgs {
    pub fn run(self) -> Result<ExitCode> {
        let defaults = SynthOptions::default();
        let base = SynthOptions {
            scenes: self.scenes,
            seed: self.seed,
            duration_s: self.duration.unwrap_or(defaults.duration_s),
            image_width: self.width.unwrap_or(defaults.image_width),
            image_height: self.height.unwrap_or(defaults.image_height),
            ..defaults
        };
        // The version folder and the sweeps exist only in the nuScenes layout.
        let opts = SynthOptions {
            version: self.version,
            write_sweeps: !self.no_sweeps,
            ..base
        };
        println!("{}", crate::synth::write(self.format, &self.out, &opts)?);
        Ok(ExitCode::SUCCESS)
    }
}
