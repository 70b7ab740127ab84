//! `drivegen export`: a release in an evaluation harness's format.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::export::lmms_eval::LmmsEvalOptions;
use crate::export::{ExportOptions, Format};
use crate::Result;
use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    /// LLaVA conversations ({split}.json) and images/.
    Llava,
    /// VLMEvalKit's multiple-choice TSV ({name}.tsv) with base64 images.
    Vlmevalkit,
    /// One JSON object per row ({split}.jsonl) and images/.
    Jsonl,
    /// lmms-eval tasks (YAML and utils.py) reading the release folder itself.
    LmmsEval,
}

/// Write a release in an evaluation harness's format.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The release folder.
    pub release: PathBuf,
    #[arg(long, value_enum)]
    pub format: FormatArg,
    /// The folder to write (created; not inside the release).
    #[arg(long)]
    pub out: PathBuf,
    /// The dataset's name in VLMEvalKit (the TSV's file name), the tasks' prefix in lmms-eval
    /// (lower-cased). Avoid "mmbench" and "circular" in it: VLMEvalKit evaluates names
    /// containing them circularly.
    #[arg(long, default_value = "DriveGen")]
    pub name: String,
}

impl ExportArgs {
    pub fn run(self) -> Result<ExitCode> {
        let format = match self.format {
            FormatArg::Llava => Format::Llava,
            FormatArg::Vlmevalkit => Format::Vlmevalkit,
            FormatArg::Jsonl => Format::Jsonl,
            FormatArg::LmmsEval => {
                let summary = crate::export::lmms_eval::run(&LmmsEvalOptions {
                    release: self.release,
                    out: self.out,
                    name: self.name,
                })?;
                println!("{summary}");
                return Ok(ExitCode::SUCCESS);
            }
        };
        let summary = crate::export::run(&ExportOptions {
            release: self.release,
            out: self.out,
            format,
            name: self.name,
        })?;
        println!("{summary}");
        Ok(ExitCode::SUCCESS)
    }
}
