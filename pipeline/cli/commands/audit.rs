//! `drivegen audit`: a release's blind baselines beside chance.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::Args;

use crate::cli::args::fraction;

/// Measure a release's blind baselines: how well models that never see an image answer it.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The release folder.
    pub release: PathBuf,
    /// Print the audit as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also record the audit in the release's manifest.json (as `blind_audit`).
    #[arg(long)]
    pub write: bool,
    /// Exit 1 when a family's best blind baseline beats chance by more than this.
    #[arg(long, value_parser = fraction)]
    pub max_excess: Option<f64>,
}

impl AuditArgs {
    pub fn run(self) -> Result<ExitCode> {
        let report = crate::release::blind::audit(&self.release)?;
        if self.write {
            let _owned =
                crate::store::owner::Owned::claim(&self.release, "release", "manifest.json")?;
            crate::release::blind::write_audit(&self.release, &report)?;
        }
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
        } else {
            print!(
                "{}",
                crate::progress::printable(&crate::audit::table(&report))
            );
        }
        let over = self
            .max_excess
            .is_some_and(|m| report.families.values().any(|b| b.excess() > m));
        Ok(if over {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }
}
