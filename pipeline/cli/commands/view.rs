//! `drivegen view`: a static HTML viewer of a release.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::Args;

/// Write a static HTML viewer of a release (no server: open its index.html): filters by split,
/// family, type and answer, each row's images, prompt, options with the key, rule and evidence.
#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    /// The release folder.
    pub release: PathBuf,
    /// The viewer's folder (default: RELEASE-viewer beside the release).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl ViewArgs {
    pub fn run(self) -> Result<ExitCode> {
        let out = self.out.unwrap_or_else(|| {
            let mut name = self
                .release
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_else(|| "release".into());
            name.push("-viewer");
            self.release.with_file_name(name)
        });
        println!("{}", crate::view::run(&self.release, &out)?);
        Ok(ExitCode::SUCCESS)
    }
}
