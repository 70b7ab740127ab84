//! The `audit` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use drivegen::Result;

/// Measure a release's blind baselines: how well models that never see an image answer it.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The release folder.
    pub release: PathBuf,
    /// Print the audit as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also record the audit in the release's manifest.json (as `blind_audit`).
    #[arg(long)]
    pub write: bool,
    /// Exit 1 when a family's best blind baseline beats chance by more than this.
    #[arg(long, value_parser = crate::cli::fraction)]
    pub max_excess: Option<f64>,
}

pub fn audit(a: AuditArgs) -> Result<ExitCode> {
    let report = drivegen::audit::run(&a.release)?;
    if a.write {
        let _owned = drivegen::store::owner::Owned::claim(&a.release, "release", "manifest.json")?;
        drivegen::audit::write_to_manifest(&a.release, &report)?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", drivegen::audit::table(&report));
    }
    let over = a
        .max_excess
        .is_some_and(|m| report.families.values().any(|b| b.excess() > m));
    Ok(if over {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
