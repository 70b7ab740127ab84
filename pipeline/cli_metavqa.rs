//! The `metavqa` command (kept apart from `cli.rs`/`run.rs` so that other commands' edits and
//! this one do not touch the same lines).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use drivegen::metavqa::{self, Device, MetavqaConfig, Options};
use drivegen::som::SomConfig;
use drivegen::Result;

/// MetaVQA questions (spatial, embodied, grounding) on Set-of-Mark images.
#[derive(Debug, Args)]
pub struct MetavqaArgs {
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
    #[arg(long, value_parser = crate::cli::count32)]
    pub per_frame: Option<u32>,
    /// The seed (overrides the config's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where marks are drawn.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Questions only, no marked images.
    #[arg(long)]
    pub no_images: bool,
    /// Only this scene.
    #[arg(long)]
    pub scene: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    Auto,
    Gpu,
    Cpu,
}

pub fn metavqa(a: MetavqaArgs) -> Result<ExitCode> {
    let mut config = MetavqaConfig::load(a.config.as_deref())?;
    if let Some(n) = a.per_frame {
        config.per_frame = n;
    }
    if let Some(s) = a.seed {
        config.seed = s;
    }
    let opts = Options {
        store: a.store,
        visibility: a.visibility,
        out: a.out,
        config,
        som: SomConfig::load(a.som_config.as_deref())?,
        device: match a.device {
            DeviceArg::Auto => Device::Auto,
            DeviceArg::Gpu => Device::Gpu,
            DeviceArg::Cpu => Device::Cpu,
        },
        images: !a.no_images,
        scene: a.scene,
    };
    print!("{}", metavqa::run(&opts)?);
    Ok(ExitCode::SUCCESS)
}
