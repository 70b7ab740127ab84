//! `drivegen score`: a model's answers against a release, or predicted SIGs against their
//! truth.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::StageConfig;
use crate::{score, Error, Result};
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// The release folder (reads the shards manifest.json lists).
    #[arg(long, required_unless_present = "sig_pred")]
    pub release: Option<PathBuf>,
    /// JSON lines `{"qa_id": ..., "prediction": ..., "split": ...}` (`split` optional).
    #[arg(long, required_unless_present = "sig_pred")]
    pub predictions: Option<PathBuf>,
    /// The split that predictions naming none answer (default: the release's main split; the
    /// text-only control is `<split>_text_only`).
    #[arg(long)]
    pub split: Option<String>,
    /// Read shards whose sha256 no longer matches manifest.json (edited by hand), and ignore
    /// Parquet files in data/ that it does not list.
    #[arg(long)]
    pub no_verify: bool,
    #[command(flatten)]
    pub sig: SigScoreArgs,
    /// Write the full report as JSON here (`-`: standard output, the summary then goes to
    /// standard error).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a page with one plot per family re-asked by robustness splits: accuracy per
    /// setting beside clean, text-only and chance.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

/// `drivegen score --sig-pred FILE --sig-truth sig_frames.arrow`: the SIG metrics.
#[derive(Debug, Args)]
pub(crate) struct SigScoreArgs {
    /// Predicted SIGs: JSON lines `{"camera_frame_id": ..., "sig": {...}}`, optionally with
    /// `"answers_directional"`/`"answers_proximal"` in the frame's relation order.
    #[arg(long, requires = "sig_truth")]
    pub sig_pred: Option<PathBuf>,
    /// The `sig_frames.arrow` the predictions are scored against.
    #[arg(long, requires = "sig_pred")]
    pub sig_truth: Option<PathBuf>,
    /// Replaces configs/sig.toml (its `[metrics]` weights).
    #[arg(long)]
    pub sig_config: Option<PathBuf>,
}

impl ScoreArgs {
    pub fn run(self) -> Result<ExitCode> {
        if let (Some(pred), Some(truth)) = (&self.sig.sig_pred, &self.sig.sig_truth) {
            if let Some(out) = self
                .out
                .as_deref()
                .filter(|o| !crate::store::atomic::is_stdout(o))
            {
                crate::store::paths::disjoint(pred, "--sig-pred", out, "--out")?;
                crate::store::paths::disjoint(truth, "--sig-truth", out, "--out")?;
                if let Some(cfg) = self.sig.sig_config.as_deref() {
                    crate::store::paths::disjoint(cfg, "--sig-config", out, "--out")?;
                }
                crate::store::owner::file_output(out)?;
            }
            let cfg = crate::sig::SigConfig::load(self.sig.sig_config.as_deref())?;
            let report = score::sig::score_files(&cfg, pred, truth)?;
            return report_and_summary(self.out.as_deref(), &report, score::sig::summary(&report));
        }
        let (Some(release), Some(preds)) = (&self.release, &self.predictions) else {
            return Err(Error::invalid(
                "score",
                "give --release and --predictions (or --sig-pred and --sig-truth)",
            ));
        };
        if let (Some(out), Some(html)) = (self.out.as_deref(), self.html.as_deref()) {
            if !crate::store::atomic::is_stdout(out) {
                crate::store::paths::distinct_outputs(&[(out, "--out"), (html, "--html")])?;
            }
        }
        if let Some(out) = self.out.as_deref() {
            if !crate::store::atomic::is_stdout(out) {
                crate::store::paths::disjoint(preds, "--predictions", out, "--out")?;
                crate::store::paths::disjoint(release, "--release", out, "--out")?;
                crate::store::owner::file_output(out)?;
            }
        }
        if let Some(html) = self.html.as_deref() {
            crate::store::paths::disjoint(preds, "--predictions", html, "--html")?;
            crate::store::paths::disjoint(release, "--release", html, "--html")?;
            crate::store::owner::file_output(html)?;
        }
        let predictions = score::read_predictions(preds)?;
        let report = score::score_release(
            release,
            !self.no_verify,
            &predictions,
            self.split.as_deref(),
        )?;
        if let Some(html) = self.html.as_deref() {
            let title = format!("drivegen robustness: {}", release.display());
            let page = score::robustness::html(&title, &report.robustness);
            crate::store::atomic::write_atomic(html, page.as_bytes())?;
        }
        report_and_summary(
            self.out.as_deref(),
            &report,
            score::release_summary(&report),
        )
    }
}

/// Writes the JSON report where `--out` says and prints the summary: on standard error when
/// the report itself goes to standard output (`--out -`), so that output is JSON alone.
fn report_and_summary(
    out: Option<&Path>,
    report: &impl serde::Serialize,
    summary: String,
) -> Result<ExitCode> {
    let mut to_stdout = false;
    if let Some(out) = out {
        let json = serde_json::to_string_pretty(report)
            .map_err(|e| Error::Internal(format!("{}: the report: {e}", out.display())))?;
        crate::store::atomic::write_report(out, (json + "\n").as_bytes())?;
        to_stdout = crate::store::atomic::is_stdout(out);
    }
    if to_stdout {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}
