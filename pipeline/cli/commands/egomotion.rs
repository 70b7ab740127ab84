//! `drivegen egomotion`: 10 Hz kinematics, 3 s clips and the EgoDyn questions of a store.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::egomotion;
use crate::Result;
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct EgomotionArgs {
    /// The scene store to read.
    #[arg(long)]
    pub store: PathBuf,
    /// Output folder (clips.arrow, egodyn_qa.arrow, egodyn_rejects.jsonl).
    #[arg(long)]
    pub out: PathBuf,
    /// An EgoDyn config replacing `configs/egodyn.toml`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Only the scenes of shard i of N (0-based; a scene's shard is a hash of its id), so
    /// N machines can share the work; `balance` merges the shards' QA tables.
    #[arg(long, default_value = "0/1")]
    pub shard: crate::shard::Shard,
}

impl EgomotionArgs {
    pub fn run(self) -> Result<ExitCode> {
        let summary = crate::egomotion::run(&egomotion::Options {
            shard: self.shard,
            ..egomotion::Options::new(self.store, self.out, self.config.as_deref())?
        })?;
        print!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
