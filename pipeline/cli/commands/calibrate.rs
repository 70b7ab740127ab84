//! `drivegen calibrate`: re-fit the EgoDyn oracle's thresholds to a new platform's clips.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The scene store holding the new platform's drives.
    #[arg(long)]
    pub store: PathBuf,
    /// The config to start from (default: the built-in `configs/egodyn.toml`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where to write the recalibrated config (TOML).
    #[arg(long)]
    pub out: PathBuf,
    /// Where to write the Markdown calibration report.
    #[arg(long)]
    pub report: PathBuf,
    /// Sensitivity study over quantile levels, `start:end:step` (e.g. 0.80:0.95:0.05).
    #[arg(long, value_parser = parse_sweep)]
    pub alpha_sweep: Option<(f64, f64, f64)>,
}

fn parse_sweep(s: &str) -> std::result::Result<(f64, f64, f64), String> {
    let parts: Vec<&str> = s.split(':').collect();
    let nums: Vec<f64> = parts
        .iter()
        .map(|p| p.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| format!("`{s}`: {e}; expected start:end:step"))?;
    match nums[..] {
        [a, b, c] => Ok((a, b, c)),
        _ => Err(format!("`{s}`: expected start:end:step")),
    }
}

impl CalibrateArgs {
    pub fn run(self) -> Result<ExitCode> {
        crate::store::paths::distinct_outputs(&[(&self.out, "--out"), (&self.report, "--report")])?;
        let summary = crate::egomotion::calibrate::run(
            &self.store,
            self.config.as_deref(),
            &self.out,
            &self.report,
            self.alpha_sweep,
        )?;
        print!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
