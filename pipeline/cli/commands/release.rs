//! `drivegen release`: Parquet shards in the Hugging Face layout, manifest.json and a card.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::gpu::DeviceChoice;
use crate::release::{
    self, ImageMode, DEFAULT_NAME, DEFAULT_ROWS_PER_SHARD, DEFAULT_ROW_GROUP_MIB,
    DEFAULT_ROW_GROUP_ROWS, DEFAULT_SPLIT,
};
use crate::robustness::RobustnessOptions;
use crate::Result;
use clap::{Args, ValueEnum};

use crate::cli::args::{count, device};

#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
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
    #[arg(long, default_value = DEFAULT_SPLIT)]
    pub split: String,
    #[arg(long, default_value_t = DEFAULT_ROWS_PER_SHARD, value_parser = count)]
    pub rows_per_shard: usize,
    #[arg(long, default_value_t = DEFAULT_ROW_GROUP_ROWS, value_parser = count)]
    pub row_group_rows: usize,
    /// A row group also ends once its distinct images reach this many MiB (bounds memory).
    #[arg(long, default_value_t = DEFAULT_ROW_GROUP_MIB, value_parser = count)]
    pub row_group_mib: usize,
    /// `embed` the image files or publish `paths` only.
    #[arg(long, value_enum, default_value_t = ImagesArg::Embed)]
    pub images: ImagesArg,
    /// The dataset's name on its card.
    #[arg(long, default_value = DEFAULT_NAME)]
    pub name: String,
    /// A folder that rows' `image_paths` are relative to (a `corrupt` or `metavqa` output
    /// folder); repeatable, searched in order.
    #[arg(long = "image-dir")]
    pub image_dirs: Vec<PathBuf>,
    /// Also write every question with black images into the split `{split}_text_only`.
    #[arg(long)]
    pub text_only_controls: bool,
    /// Also write every image the release draws (from the stages' marked_images.arrow and
    /// corruptions.arrow) under this folder, at its published path.
    #[arg(long, value_name = "DIR")]
    pub keep_images: Option<PathBuf>,
    /// Where images are drawn: `auto` (a hardware GPU, else the CPU twins), `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Also re-ask up to N rows of each family under each corruption, a split per setting
    /// (DriveBench's robustness study; turns the text-only control on).
    #[arg(long, value_name = "N", value_parser = count)]
    pub robustness_rows: Option<usize>,
    /// `all` or a comma-separated list of families to re-ask.
    #[arg(long, default_value = "all", requires = "robustness_rows")]
    pub robustness_families: String,
    /// `all` or a comma-separated list of corruptions.
    #[arg(long, default_value = "all", requires = "robustness_rows")]
    pub robustness_corruptions: String,
    /// `default` (DriveBench's per corruption), `all`, or severities such as `1,3,5`.
    #[arg(long, default_value = "default", requires = "robustness_rows")]
    pub robustness_severities: String,
    /// Seeds the draw of re-asked rows and the corruptions.
    #[arg(long, default_value_t = 0, requires = "robustness_rows")]
    pub seed: u64,
    /// Replaces configs/corruptions.toml for the robustness splits.
    #[arg(long, requires = "robustness_rows")]
    pub corrupt_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImagesArg {
    Embed,
    Paths,
}

impl ReleaseArgs {
    pub fn run(self) -> Result<ExitCode> {
        let robustness = match self.robustness_rows {
            None => None,
            Some(rows) => {
                let config = crate::corrupt::CorruptConfig::load(self.corrupt_config.as_deref())?;
                let settings = RobustnessOptions::settings(
                    &crate::corrupt::run::parse_corruptions(&self.robustness_corruptions)?,
                    &crate::robustness::parse_severities(&self.robustness_severities)?,
                    &config,
                )?;
                Some(RobustnessOptions {
                    families: crate::robustness::parse_families(&self.robustness_families)?,
                    settings,
                    rows,
                    seed: self.seed,
                    config: std::sync::Arc::new(config),
                })
            }
        };
        let opts = release::Options {
            qa: self.qa,
            stores: self.store,
            images_root: self.images_root,
            out: self.out,
            split: self.split,
            rows_per_shard: self.rows_per_shard,
            row_group_rows: self.row_group_rows,
            row_group_bytes: self.row_group_mib << 20,
            images: match self.images {
                ImagesArg::Embed => ImageMode::Embed,
                ImagesArg::Paths => ImageMode::Paths,
            },
            name: self.name,
            image_dirs: self.image_dirs,
            text_only_controls: self.text_only_controls || robustness.is_some(),
            keep_images: self.keep_images,
            robustness,
            device: crate::gpu::Device::open(self.device)?,
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
}
