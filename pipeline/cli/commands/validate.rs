//! `drivegen validate`: check a release as users get it.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::Args;

/// Check a release as users get it.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The release folder (manifest.json, README.md, data/*.parquet).
    pub release: PathBuf,
    /// Print the report as JSON (every violation) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Violations listed in the summary.
    #[arg(long, default_value_t = 50)]
    pub max_listed: usize,
}

impl ValidateArgs {
    pub fn run(self) -> Result<ExitCode> {
        let rep = crate::validate::run(&self.release)?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&rep).unwrap_or_default());
        } else {
            print!(
                "{}",
                crate::progress::printable(&rep.summary(self.max_listed))
            );
        }
        Ok(if rep.ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}
