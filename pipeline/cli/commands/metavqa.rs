//! `drivegen metavqa`: MetaVQA questions (spatial, embodied, grounding) on Set-of-Mark
//! images.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::gpu::{Device, DeviceChoice};
use crate::metavqa::{self, MetavqaConfig, Options};
use crate::som::SomConfig;
use crate::Result;
use clap::Args;

use crate::cli::args::{count32, device};

/// MetaVQA questions (spatial, embodied, grounding) on Set-of-Mark images.
#[derive(Debug, Args)]
pub(crate) struct MetavqaArgs {
    #[arg(long)]
    pub store: PathBuf,
    /// The table `drivegen visibility` wrote for this store.
    #[arg(long)]
    pub visibility: PathBuf,
    /// Output folder: metavqa_qa.arrow, rollouts.json, images/.
    #[arg(long)]
    pub out: PathBuf,
    /// configs/metavqa.toml replacement.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// configs/som.toml replacement (label drawing).
    #[arg(long)]
    pub som_config: Option<PathBuf>,
    /// At most N questions per camera image, drawn by type weight (overrides per_frame).
    #[arg(long, value_parser = count32)]
    pub per_frame: Option<u32>,
    /// The seed (overrides the config's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where marks are drawn: `auto` (a hardware GPU, else the CPU twin), `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = device)]
    pub device: DeviceChoice,
    /// Only the tables, no PNG files: a release draws the marked images it publishes from
    /// marked_images.arrow.
    #[arg(long)]
    pub no_images: bool,
    /// Only this scene.
    #[arg(long)]
    pub scene: Option<String>,
}

impl MetavqaArgs {
    pub fn run(self) -> Result<ExitCode> {
        let mut config = MetavqaConfig::load(self.config.as_deref())?;
        if let Some(n) = self.per_frame {
            config.per_frame = n;
        }
        if let Some(s) = self.seed {
            config.seed = s;
        }
        let opts = Options {
            store: self.store,
            visibility: self.visibility,
            out: self.out,
            config,
            som: SomConfig::load(self.som_config.as_deref())?,
            device: if self.no_images {
                Device::Cpu
            } else {
                Device::open(self.device)?
            },
            images: !self.no_images,
            scene: self.scene,
        };
        print!("{}", metavqa::run(&opts)?);
        Ok(ExitCode::SUCCESS)
    }
}
