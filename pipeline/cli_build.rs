//! The `build` and `demo` commands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use drivegen::build::config::BuildConfig;
use drivegen::build::{self, BuildOptions};
use drivegen::shard::Shard;
use drivegen::{Error, Result};

/// Build a release from a build config (see configs/build/).
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The build config (TOML).
    pub config: PathBuf,
    /// The release folder (default: the config's `out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The work folder for intermediate tables (default: the config's `work`, else
    /// `<out>.work`). Keep it to resume an interrupted build.
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// Run only the per-scene steps for shard i of N (0-based), e.g. a Slurm array task's
    /// `$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`; finish with `--merge N`.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Balance and release the outputs of N shard builds (all in the same work folder).
    #[arg(long, value_name = "N", value_parser = crate::cli::count32)]
    pub merge: Option<u32>,
    /// Override the config's seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Synthesise the built-in corpus and build everything into ./demo-release.
#[derive(Debug, Args)]
pub struct DemoArgs {
    #[arg(long, default_value = "demo-release")]
    pub out: PathBuf,
    /// Scenes in the synthetic corpus.
    #[arg(long, value_parser = crate::cli::count)]
    pub scenes: Option<usize>,
    #[arg(long)]
    pub seed: Option<u64>,
}

fn finish(opts: &BuildOptions) -> Result<ExitCode> {
    let s = build::run(opts)?;
    print!("{s}");
    Ok(ExitCode::SUCCESS)
}

pub fn build(a: BuildArgs) -> Result<ExitCode> {
    let text = drivegen::store::input::read_to_string(&a.config, drivegen::store::input::CONFIG)?;
    let mut cfg = BuildConfig::from_toml(&text, &a.config)?;
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    if let Some(o) = a.out {
        cfg.out = o;
    }
    if let Some(w) = a.work {
        cfg.work = Some(w);
    }
    let mut opts = BuildOptions::new(cfg, text);
    opts.shard = a.shard;
    opts.merge = a.merge;
    finish(&opts)
}

pub fn demo(a: DemoArgs) -> Result<ExitCode> {
    let mut cfg = BuildConfig::everything()?;
    cfg.out = a.out;
    cfg.work = None;
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    if let (Some(n), drivegen::build::config::InputConfig::Synth { scenes, .. }) =
        (a.scenes, &mut cfg.input)
    {
        *scenes = n.max(1);
    }
    // The manifest records the config that was actually built.
    let text = toml::to_string(&cfg).map_err(|e| Error::Usage(e.to_string()))?;
    finish(&BuildOptions::new(cfg, text))
}
