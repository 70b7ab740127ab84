//! `drivegen stsbench`: mine STSBench scenarios and write their multiple-choice questions.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::stsbench::{self, StsConfig};
use crate::Result;
use clap::Args;

/// Mine STSBench scenarios from a store and write their multiple-choice questions.
#[derive(Debug, Args)]
pub(crate) struct StsbenchArgs {
    #[arg(long)]
    pub store: PathBuf,
    /// Output folder (gets stsbench_qa.arrow).
    #[arg(long)]
    pub out: PathBuf,
    /// Replaces configs/stsbench.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Map-expansion folder (`<location>.json`); default `<source root>/maps/expansion`.
    #[arg(long)]
    pub maps: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl StsbenchArgs {
    pub fn run(self) -> Result<ExitCode> {
        let opts = stsbench::Options {
            store: self.store,
            out: self.out,
            config: StsConfig::load(self.config.as_deref())?,
            seed: self.seed,
            maps: self.maps,
        };
        print!("{}", crate::stsbench::run(&opts)?);
        Ok(ExitCode::SUCCESS)
    }
}
