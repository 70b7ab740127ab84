//! `drivegen som`: draw Set-of-Mark boxes and numbered labels into the keyframe images.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use drivegen::config::StageConfig;
use drivegen::gpu::DeviceChoice;
use drivegen::som::SomConfig;
use drivegen::visibility::config::VisibilityConfig;
use drivegen::Result;

use crate::args::device;

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
        let vis_cfg = VisibilityConfig::load(self.visibility_config.as_deref())?;
        let rasteriser = drivegen::visibility::rasteriser(self.device)?;
        let summary = drivegen::som::run(&drivegen::som::Options {
            store: &self.store,
            visibility: &self.visibility,
            out: &self.out,
            config: &cfg,
            visibility_config: &vis_cfg,
            rasteriser: rasteriser.as_ref(),
            scene: self.scene.as_deref(),
            images: !self.no_images,
        })?;
        print!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
