//! `drivegen trace`: one release row followed back to its source.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::release::trace;
use crate::{Error, Result};
use clap::Args;

/// Print the chain of one question: source record, images, the rule with its parameters and
/// evidence, the prompt and its key.
#[derive(Debug, Args)]
pub(crate) struct TraceArgs {
    /// The release folder.
    pub release: PathBuf,
    /// The row's `qa_id`.
    pub qa_id: String,
}

impl TraceArgs {
    pub fn run(self) -> Result<ExitCode> {
        let found = trace::find(&self.release, &self.qa_id)?;
        if found.is_empty() {
            return Err(Error::Input {
                file: self.release.join("data"),
                record: self.qa_id,
                detail: "no row of the release has this qa_id".into(),
            });
        }
        for (k, f) in found.iter().enumerate() {
            if k > 0 {
                println!();
            }
            print!(
                "{}",
                crate::progress::printable(&trace::render(&self.release, f)?)
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
