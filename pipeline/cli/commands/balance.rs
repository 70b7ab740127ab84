//! `drivegen balance`: EgoDyn's greedy selection, caps, answer and letter balancing, and the
//! blind filter over question tables.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::balance::{self, greedy};
use crate::Result;
use clap::{Args, ValueEnum};

use crate::cli::args::{count, fraction, ratio};

#[derive(Debug, Args)]
pub(crate) struct BalanceArgs {
    /// QA tables to balance (Arrow IPC, the common QA record); repeat for several.
    #[arg(long = "qa", required = true)]
    pub qa: Vec<PathBuf>,
    /// Output folder (balanced_qa.arrow, balance_report.md, balance_report.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Items (clips or frames) to select.
    #[arg(long, value_parser = count)]
    pub target: usize,
    /// A source cap, `SOURCE=N` (repeatable), e.g. `nuscenes=500`.
    #[arg(long = "cap", value_parser = parse_cap)]
    pub caps: Vec<(String, usize)>,
    /// `paper` (joint argmax of the deficit, Algorithm 1) or `released` (the public code's
    /// question-first choice).
    #[arg(long, value_enum, default_value_t = BalanceMode::Paper)]
    pub mode: BalanceMode,
    /// Keep at most N questions per (family, type).
    #[arg(long, value_parser = count)]
    pub type_cap: Option<usize>,
    /// Make answer letters uniform within every (family, type).
    #[arg(long)]
    pub balance_letters: bool,
    /// No answer of a (family, type) keeps more than this many times the rows of its rarest
    /// answer (1 is uniform).
    #[arg(long, value_parser = ratio)]
    pub answer_ratio: Option<f64>,
    /// Take out of every row the options no row of its (family, type) has as its answer;
    /// rows left with one option are dropped.
    #[arg(long)]
    pub prune_options: bool,
    /// At most this many rows, taken evenly over (type, answer).
    #[arg(long, value_parser = count)]
    pub max_rows: Option<usize>,
    /// Drop rows blind baselines answer without the image until the best one is within this
    /// margin of chance (dropped rows in blind_filter.jsonl).
    #[arg(long, value_parser = fraction)]
    pub max_blind_excess: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BalanceMode {
    Paper,
    Released,
}

fn parse_cap(s: &str) -> std::result::Result<(String, usize), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected SOURCE=N"))?;
    let n = v
        .trim()
        .parse()
        .map_err(|e| format!("`{s}`: {v} is not a count: {e}"))?;
    Ok((k.trim().to_string(), n))
}

impl BalanceArgs {
    pub fn run(self) -> Result<ExitCode> {
        let opts = balance::Options {
            inputs: self.qa,
            out: self.out,
            spec: greedy::BalanceSpec {
                target: self.target,
                source_caps: self.caps.into_iter().collect(),
                targets: Default::default(),
                mode: match self.mode {
                    BalanceMode::Paper => greedy::Mode::Paper,
                    BalanceMode::Released => greedy::Mode::Released,
                },
            },
            type_cap: self.type_cap,
            balance_letters: self.balance_letters,
            answer_ratio: self.answer_ratio,
            prune_options: self.prune_options,
            max_rows: self.max_rows,
            max_blind_excess: self.max_blind_excess,
        };
        let o = balance::run(&opts)?;
        println!(
            "balance: {} items → {} selected ({} rows) in {}; {} fallback steps, shortfall {}",
            o.items_in,
            o.selection.chosen.len(),
            o.rows,
            opts.out.display(),
            o.selection.fallbacks,
            o.selection.shortfall
        );
        println!(
            "  majority-answer accuracy {:.3} → {:.3}; report in {}",
            o.before.overall_majority_accuracy(),
            o.after.overall_majority_accuracy(),
            opts.out.join("balance_report.md").display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
