//! `drivegen corrupt`: the DriveBench corruptions over images or a store, or a contact sheet
//! of one image under all of them.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::corrupt::run::{self as corrupt_run, Input};
use crate::corrupt::CorruptConfig;
use crate::gpu::{Device, DeviceChoice};
use crate::{Error, Result};
use clap::Args;

use crate::cli::args::{count, count32, device};

/// Corrupt images with the DriveBench corruptions (and write recognition questions).
#[derive(Debug, Args)]
pub(crate) struct CorruptArgs {
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
    /// Where the per-pixel corruptions run: `auto` (a hardware GPU, else the CPU twins),
    /// `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Only the first N frames.
    #[arg(long, value_parser = count)]
    pub max_frames: Option<usize>,
    /// With --store, only the first N keyframes of every scene.
    #[arg(long, value_parser = count)]
    pub frames_per_scene: Option<usize>,
    /// Only the tables (corruptions.arrow, corruption_qa.arrow), no images except the codec
    /// corruptions': a release corrupts the images it publishes from corruptions.arrow.
    #[arg(long)]
    pub no_images: bool,
    /// Draw IMG under all 15 corruptions × 5 severities into --out (a PNG).
    #[arg(long, value_name = "IMG")]
    pub contact_sheet: Option<PathBuf>,
    /// Width of one contact-sheet cell in pixels.
    #[arg(long, default_value_t = 320, value_parser = count32)]
    pub cell_width: u32,
}

impl CorruptArgs {
    pub fn run(self) -> Result<ExitCode> {
        let config = CorruptConfig::load(self.config.as_deref())?;
        if let Some(img) = &self.contact_sheet {
            let legend = crate::corrupt::sheet::contact_sheet(
                &config,
                img,
                &self.out,
                self.seed,
                Device::open(self.device)?.gpu(),
                self.cell_width,
            )?;
            println!(
                "contact sheet: {} (legend {})",
                self.out.display(),
                legend.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let input = match (self.images, self.store) {
            (Some(d), None) => Input::Images(d),
            (None, Some(s)) => Input::Store(s),
            _ => {
                return Err(Error::invalid(
                    "corrupt",
                    "give --images DIR or --store STORE (or --contact-sheet IMG)",
                ))
            }
        };
        let corruptions = corrupt_run::parse_corruptions(&self.corruption)?;
        // Codecs run in ffmpeg: a codec-only run opens no device.
        let device = if corruptions.iter().all(|c| c.is_codec()) {
            Device::Cpu
        } else {
            Device::open(self.device)?
        };
        let opts = corrupt_run::Options {
            input,
            out: self.out,
            corruptions,
            severities: corrupt_run::parse_severities(&self.severity)?,
            seed: self.seed,
            config,
            device,
            max_frames: self.max_frames,
            frames_per_scene: self.frames_per_scene,
            images: !self.no_images,
        };
        print!("{}", corrupt_run::run(&opts)?);
        Ok(ExitCode::SUCCESS)
    }
}
