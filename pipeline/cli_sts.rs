//! The `stsbench` and `sig` commands (kept apart from `cli.rs`/`run.rs` so that other
//! commands' edits and these do not touch the same lines).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use drivegen::Result;

/// Mine STSBench scenarios from a store and write their multiple-choice questions.
#[derive(Debug, Args)]
pub struct StsbenchArgs {
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

pub fn stsbench(a: StsbenchArgs) -> Result<ExitCode> {
    let opts = drivegen::stsbench::StsOptions {
        store: a.store,
        out: a.out,
        config: drivegen::stsbench::StsConfig::load(a.config.as_deref())?,
        seed: a.seed,
        maps: a.maps,
    };
    print!("{}", drivegen::stsbench::run(&opts)?);
    Ok(ExitCode::SUCCESS)
}
