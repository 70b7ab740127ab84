//! `drivegen visibility`: project every box into every keyframe camera and measure its
//! z-buffer visibility.

use crate::config::StageConfig;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::gpu::DeviceChoice;
use crate::som::SomConfig;
use crate::visibility;
use crate::Result;
use clap::Args;

use crate::cli::args::device;

#[derive(Debug, Args)]
pub(crate) struct VisibilityArgs {
    /// The scene store to read.
    #[arg(long)]
    pub store: PathBuf,
    /// The table to write (Arrow IPC); rejects go next to it as `<name>.rejects.jsonl`.
    #[arg(long)]
    pub out: PathBuf,
    /// A visibility config replacing `configs/visibility.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The Set-of-Mark config the marks will be drawn with (`drivegen som --config`,
    /// `drivegen metavqa --som-config`): its anchor rules place the table's label anchors, and
    /// those stages refuse a table made under other rules. Default: the built-in
    /// `configs/som.toml`.
    #[arg(long)]
    pub som_config: Option<PathBuf>,
    /// Also write every image's instance-ID map as a 16-bit PNG under this folder.
    #[arg(long)]
    pub id_maps: Option<PathBuf>,
    /// Where the z-buffer runs: `gpu`, `cpu` (the plain-Rust twin; same results, bit for bit)
    /// or `auto` (a hardware GPU when one opens, else the CPU twin, saying so).
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
}

impl VisibilityArgs {
    pub fn run(self) -> Result<ExitCode> {
        if let Some(d) = &self.id_maps {
            crate::store::paths::distinct_outputs(&[(&self.out, "--out"), (d, "--id-maps")])?;
        }
        let rasteriser = crate::visibility::rasteriser(&crate::gpu::Device::open(self.device)?)?;
        let summary = crate::visibility::run(&visibility::Options {
            rasteriser: rasteriser.as_ref(),
            id_maps: self.id_maps,
            anchor: SomConfig::load(self.som_config.as_deref())?.anchor_rules(),
            ..visibility::Options::new(self.store, self.out, self.config.as_deref())?
        })?;
        print!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
