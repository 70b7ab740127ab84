//! Progress bars for long work.
//!
//! Bars go to stderr and hide themselves when stderr is not a terminal (CI, pipes), so logs
//! stay clean; `DRIVEGEN_PROGRESS=0` hides them everywhere.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps labelled `what` (e.g. "ingest scenes").
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if std::env::var("DRIVEGEN_PROGRESS").is_ok_and(|v| v == "0") {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template(
        "{prefix:>16} [{elapsed_precise}] {bar:40} {pos}/{len} {per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    pb
}
