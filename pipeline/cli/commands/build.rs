//! `drivegen build`: a release from a build config, every stage, resumable and shardable.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::chain::config::BuildConfig;
use crate::chain::{self, BuildOptions};
use crate::shard::ShardSpec;
use crate::Result;
use clap::Args;

use crate::cli::args::count32;

/// Build a release from a build config (see configs/releases/).
#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The build config (TOML).
    pub config: PathBuf,
    /// The release folder (default: the config's `out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The work folder for intermediate tables (default: the config's `work`, else
    /// `<out>.work`). Keep it to resume an interrupted build.
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// Run only the per-scene steps for shard i of N (0-based), then finish with `--merge N`.
    /// `auto` takes the shard from a Slurm array task (`SLURM_ARRAY_TASK_ID` of an
    /// `--array=0-(N-1)`) or a Kubernetes indexed job (`JOB_COMPLETION_INDEX`, with
    /// `--shard-count`).
    #[arg(long, value_name = "i/N|auto")]
    pub shard: Option<ShardSpec>,
    /// The number of shards, for `--shard auto` in a Kubernetes indexed job (its
    /// completions; else `DRIVEGEN_SHARD_COUNT`). Checked against the scheduler's count.
    #[arg(long, value_name = "N", value_parser = count32, requires = "shard")]
    pub shard_count: Option<u32>,
    /// Balance and release the outputs of N shard builds (all in the same work folder).
    #[arg(long, value_name = "N", value_parser = count32)]
    pub merge: Option<u32>,
    /// Override the config's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also write the images the release draws (marked, corrupted) under this folder, at
    /// their published paths, for people to look at.
    #[arg(long, value_name = "DIR")]
    pub keep_images: Option<PathBuf>,
}

impl BuildArgs {
    pub fn run(self) -> Result<ExitCode> {
        let text = crate::store::input::read_to_string(&self.config, crate::store::input::CONFIG)?;
        let mut cfg = BuildConfig::from_toml(&text, &self.config)?;
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(o) = self.out {
            cfg.out = o;
        }
        if let Some(w) = self.work {
            cfg.work = Some(w);
        }
        // The release and the work folder are checked against each other by the build.
        if let Some(k) = &self.keep_images {
            let work = cfg.work_dir();
            for other in [
                (cfg.out.as_path(), "--out (the release)"),
                (work.as_path(), "--work (the work folder)"),
            ] {
                crate::store::paths::distinct_outputs(&[other, (k, "--keep-images")])?;
            }
        }
        let mut opts = BuildOptions::new(cfg, text);
        if let Some(spec) = self.shard {
            let (shard, from) = spec
                .resolve(|k| std::env::var(k).ok(), self.shard_count)
                .map_err(|e| crate::Error::invalid("--shard", e))?;
            if spec == ShardSpec::Auto {
                eprintln!("drivegen: {from}");
            }
            opts.shard = Some(shard);
        }
        opts.merge = self.merge;
        opts.keep_images = self.keep_images;
        run_build(&opts)
    }
}

/// Runs a build and prints its summary (shared with `demo`).
pub(crate) fn run_build(opts: &BuildOptions) -> Result<ExitCode> {
    let s = chain::run(opts)?;
    print!("{s}");
    Ok(ExitCode::SUCCESS)
}
