//! `drivegen inspect`: summarise a scene store or an Arrow file.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// A scene store folder, or an Arrow IPC file (`.arrow`).
    pub path: PathBuf,
    /// Print the first N rows of each table.
    #[arg(long, default_value_t = 0)]
    pub head: usize,
    /// Show one scene of a store in detail.
    #[arg(long)]
    pub scene: Option<String>,
}

impl InspectArgs {
    pub fn run(self) -> Result<ExitCode> {
        print!(
            "{}",
            crate::inspect::inspect(&self.path, self.head, self.scene.as_deref())?
        );
        Ok(ExitCode::SUCCESS)
    }
}
