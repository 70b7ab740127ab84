//! `drivegen sig`: the SIG grid of every kept keyframe camera image and its relation
//! questions.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::sig::{self, SigConfig};
use crate::Result;
use clap::Args;

/// Build the SIG grid of every kept keyframe camera image and write its relation questions.
#[derive(Debug, Args)]
pub(crate) struct SigArgs {
    #[arg(long)]
    pub store: PathBuf,
    /// The visibility table of the store (`drivegen visibility`).
    #[arg(long)]
    pub visibility: PathBuf,
    /// Output folder (gets sig_frames.arrow and sig_qa.arrow).
    #[arg(long)]
    pub out: PathBuf,
    /// Replaces configs/sig.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SigArgs {
    pub fn run(self) -> Result<ExitCode> {
        let opts = sig::Options {
            store: self.store,
            visibility: self.visibility,
            out: self.out,
            config: SigConfig::load(self.config.as_deref())?,
            seed: self.seed,
        };
        print!("{}", crate::sig::run(&opts)?);
        Ok(ExitCode::SUCCESS)
    }
}
