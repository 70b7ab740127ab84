//! `drivegen demo`: the built-in corpus, built with the everything-config.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::chain::config::{BuildConfig, InputConfig};
use crate::chain::BuildOptions;
use crate::{Error, Result};
use clap::Args;

use crate::cli::args::count;

/// Synthesise the built-in corpus and build everything into ./demo-release.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    #[arg(long, default_value = "demo-release")]
    pub out: PathBuf,
    /// Scenes in the synthetic corpus.
    #[arg(long, value_parser = count)]
    pub scenes: Option<usize>,
    #[arg(long)]
    pub seed: Option<u64>,
}

impl DemoArgs {
    pub fn run(self) -> Result<ExitCode> {
        let mut cfg = BuildConfig::everything()?;
        cfg.out = self.out;
        cfg.work = None;
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let (Some(n), InputConfig::Synth { scenes, .. }) = (self.scenes, &mut cfg.input) {
            *scenes = n;
        }
        // The manifest records the config that was actually built.
        let text =
            toml::to_string(&cfg).map_err(|e| Error::Internal(format!("the demo config: {e}")))?;
        super::build::run_build(&BuildOptions::new(cfg, text))
    }
}
