//! The commands, one file each: a file holds its command's clap `Args` and `run(self)`, which
//! turns the arguments into the library's option structs and prints what the user asked for.
//! Nothing in the library sees clap.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Result;
use clap::{Parser, Subcommand};

use crate::cli::args::count;

mod audit;
mod balance;
mod bench;
mod build;
mod calibrate;
mod corrupt;
mod demo;
mod egomotion;
mod export;
mod gpu_info;
mod ingest;
mod inspect;
mod metavqa;
mod release;
mod score;
mod sig;
mod som;
mod stsbench;
mod synth;
mod trace;
mod validate;
mod view;
mod visibility;

/// The most `--threads` per core.
const THREADS_PER_CORE: usize = 4;

/// drivegen: build vision-language benchmark datasets for autonomous driving.
#[derive(Debug, Parser)]
#[command(name = "drivegen", version, about)]
pub(crate) struct Cli {
    /// Worker threads for CPU stages (default: all cores).
    #[arg(long, global = true, value_parser = count)]
    pub threads: Option<usize>,
    /// Write into an output folder that holds files drivegen did not write (naming them),
    /// and replace an output file drivegen did not write. Without it such outputs are refused.
    #[arg(long, global = true)]
    pub force: bool,
    /// A TOML file of input limits (`configs/limits.toml` lists the keys and their defaults):
    /// the most drivegen reads of one file, line, image or Parquet chunk before it stops.
    #[arg(long, global = true, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// More diagnostics on stderr (-v, -vv).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write the built-in synthetic corpus in the nuScenes v1.0 layout.
    Synth(synth::SynthArgs),
    /// Read a source dataset into a canonical scene store.
    Ingest(ingest::IngestArgs),
    /// Summarise a scene store or an Arrow file.
    Inspect(inspect::InspectArgs),
    /// Ego motion: 10 Hz kinematics, 3 s clips and the EgoDyn questions of a store.
    Egomotion(egomotion::EgomotionArgs),
    /// Re-fit the EgoDyn oracle's thresholds to a new vehicle platform's clips.
    Calibrate(calibrate::CalibrateArgs),
    /// Project every box into every keyframe camera and measure its z-buffer visibility.
    Visibility(visibility::VisibilityArgs),
    /// Draw Set-of-Mark boxes and numbered labels into the keyframe images with kept objects.
    Som(som::SomArgs),
    /// Apply the DriveBench corruptions; write images, corruptions.arrow, corruption_qa.arrow.
    Corrupt(corrupt::CorruptArgs),
    /// List the GPU adapters wgpu finds and the one drivegen would use.
    GpuInfo,
    /// Balance question tables: EgoDyn's greedy Algorithm 1 over clips/frames, source and
    /// per-type caps, answer-letter balancing; writes the kept rows and a report.
    Balance(balance::BalanceArgs),
    /// Write a release: Parquet shards (QA columns + embedded images) in the Hugging Face
    /// layout, manifest.json and a dataset card.
    Release(release::ReleaseArgs),
    /// Score a model's answers against a release (parsing, accuracy, balanced accuracy,
    /// macro-F1, EgoDyn's consistency metrics).
    Score(score::ScoreArgs),
    /// Build a release from a build config: every stage, balancing, Parquet shards, a report;
    /// resumable, and shardable over machines (--shard i/N, then --merge N).
    Build(build::BuildArgs),
    /// Synthesise the built-in corpus and build the everything-config into ./demo-release.
    Demo(demo::DemoArgs),
    /// Measure a stage's throughput (GPU, CPU twin, Python reference) and print a table.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Mine STSBench scenarios (tracks + map) and write stsbench_qa.arrow.
    Stsbench(stsbench::StsbenchArgs),
    /// Build SIG bird's-eye grids per kept camera image; write sig_frames.arrow and sig_qa.arrow.
    Sig(sig::SigArgs),
    /// MetaVQA questions on Set-of-Mark images: metavqa_qa.arrow, rollouts.json, images/.
    Metavqa(metavqa::MetavqaArgs),
    /// Check a release as users get it: every answer key against its prompt, every image,
    /// ids, control splits, letter balance, the manifest and the card. Exit 1 on a violation.
    Validate(validate::ValidateArgs),
    /// Blind baselines of a release (letter prior, answer prior per template, question-only
    /// classifier), fitted and scored on different scenes, beside chance.
    Audit(audit::AuditArgs),
    /// Write a release in an evaluation harness's format: LLaVA conversations, VLMEvalKit's
    /// multiple-choice TSV, or JSONL with image files.
    Export(export::ExportArgs),
    /// Follow one question back to its source: dataset, scene, frames and files, the rule with
    /// its parameters and evidence, the prompt and its key.
    Trace(trace::TraceArgs),
    /// Write a static HTML viewer of a release: filters, images, prompts, keys and evidence.
    View(view::ViewArgs),
}

impl Cli {
    /// Applies the global flags, then runs the command.
    pub fn run(self) -> Result<ExitCode> {
        if self.force {
            crate::store::owner::allow_force();
        }
        crate::store::input::check_environment()?;
        if let Some(l) = &self.limits {
            crate::config::load_limits(l)?;
        }
        if let Some(n) = self.threads {
            set_threads(n);
        }
        match self.command {
            Command::Synth(a) => a.run(),
            Command::Ingest(a) => a.run(),
            Command::Inspect(a) => a.run(),
            Command::Egomotion(a) => a.run(),
            Command::Calibrate(a) => a.run(),
            Command::Visibility(a) => a.run(),
            Command::Som(a) => a.run(),
            Command::Corrupt(a) => a.run(),
            Command::GpuInfo => gpu_info::run(),
            Command::Balance(a) => a.run(),
            Command::Release(a) => a.run(),
            Command::Score(a) => a.run(),
            Command::Build(a) => a.run(),
            Command::Demo(a) => a.run(),
            Command::Bench(b) => b.run(),
            Command::Stsbench(a) => a.run(),
            Command::Sig(a) => a.run(),
            Command::Metavqa(a) => a.run(),
            Command::Validate(a) => a.run(),
            Command::Audit(a) => a.run(),
            Command::Export(a) => a.run(),
            Command::Trace(a) => a.run(),
            Command::View(a) => a.run(),
        }
    }
}

fn set_threads(n: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // More threads than a few per core only adds memory and start-up time.
    let cap = cores * THREADS_PER_CORE;
    let n = if n > cap {
        log::warn!(
            "--threads {n} is more than {THREADS_PER_CORE} per core on this machine's {cores} \
             cores; using {cap}"
        );
        cap
    } else {
        n
    };
    // Only fails when a pool already exists, which cannot happen this early.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
}
