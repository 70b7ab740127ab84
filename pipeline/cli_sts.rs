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

/// Build the SIG grid of every kept keyframe camera image and write its relation questions.
#[derive(Debug, Args)]
pub struct SigArgs {
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

pub fn sig(a: SigArgs) -> Result<ExitCode> {
    let opts = drivegen::sig::SigOptions {
        store: a.store,
        visibility: a.visibility,
        out: a.out,
        config: drivegen::sig::SigConfig::load(a.config.as_deref())?,
        seed: a.seed,
    };
    print!("{}", drivegen::sig::run(&opts)?);
    Ok(ExitCode::SUCCESS)
}

/// `drivegen score --sig-pred FILE --sig-truth sig_frames.arrow`: the SIG metrics.
#[derive(Debug, Args)]
pub struct SigScoreArgs {
    /// Predicted SIGs: JSON lines `{"camera_frame_id": ..., "sig": {...}}`, optionally with
    /// `"answers_directional"`/`"answers_proximal"` in the frame's relation order.
    #[arg(long, requires = "sig_truth")]
    pub sig_pred: Option<PathBuf>,
    /// The `sig_frames.arrow` the predictions are scored against.
    #[arg(long, requires = "sig_pred")]
    pub sig_truth: Option<PathBuf>,
    /// Replaces configs/sig.toml (its [metrics] weights).
    #[arg(long)]
    pub sig_config: Option<PathBuf>,
}

/// Scores predicted SIGs when asked; `None` when no SIG arguments were given.
pub fn score_sig(a: &SigScoreArgs, out: Option<&std::path::Path>) -> Result<Option<ExitCode>> {
    let (Some(pred), Some(truth)) = (&a.sig_pred, &a.sig_truth) else {
        return Ok(None);
    };
    let cfg = drivegen::sig::SigConfig::load(a.sig_config.as_deref())?;
    let report = drivegen::score::sig::score_files(&cfg, pred, truth)?;
    let mut to_stdout = false;
    if let Some(out) = out {
        let json = serde_json::to_string_pretty(&report).map_err(|e| drivegen::Error::Config {
            file: out.to_path_buf(),
            detail: e.to_string(),
        })?;
        drivegen::store::atomic::write_report(out, (json + "\n").as_bytes())?;
        to_stdout = drivegen::store::atomic::is_stdout(out);
    }
    let summary = drivegen::score::sig::summary(&report);
    if to_stdout {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    Ok(Some(ExitCode::SUCCESS))
}
