//! `drivegen som`: draw Set-of-Mark boxes and numbered labels into the keyframe images.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::gpu::{Device, DeviceChoice};
use crate::som::SomConfig;
use crate::Result;
use clap::Args;

use crate::cli::args::device;

#[derive(Debug, Args)]
pub(crate) struct SomArgs {
    /// The scene store to read (its source root holds the camera images).
    #[arg(long)]
    pub store: PathBuf,
    /// The visibility table of that store (`drivegen visibility --out`).
    #[arg(long)]
    pub visibility: PathBuf,
    /// Output folder: `<scene_id>/<camera_frame_id>.png` and `marks.arrow`.
    #[arg(long)]
    pub out: PathBuf,
    /// A Set-of-Mark config replacing `configs/som.toml`. Its anchor rules must be those the
    /// visibility table was made with (`drivegen visibility --som-config`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where the marks are drawn (as for `visibility`); with `--no-images` nothing is drawn.
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Only this scene.
    #[arg(long)]
    pub scene: Option<String>,
    /// Only the tables (marks.arrow, marked_images.arrow), no PNGs: a release draws the
    /// images it publishes from the tables.
    #[arg(long)]
    pub no_images: bool,
}

impl SomArgs {
    pub fn run(self) -> Result<ExitCode> {
        let cfg = SomConfig::load(self.config.as_deref())?;
        let device = if self.no_images {
            Device::Cpu
        } else {
            Device::open(self.device)?
        };
        let summary = crate::som::run(&crate::som::Options {
            store: &self.store,
            visibility: &self.visibility,
            out: &self.out,
            config: &cfg,
            device: &device,
            scene: self.scene.as_deref(),
            images: !self.no_images,
        })?;
        print!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
