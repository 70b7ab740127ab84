//! Step checkpoints: what makes an interrupted build resume where it stopped.
//!
//! A step's outputs are complete when its checkpoint file exists and names the same key (a
//! hash of the step's parameters, the keys of the steps it reads, and the tool version). A
//! step that is not complete has its output folder removed (what drivegen recorded writing
//! there: `store::owner::remove_output`) and runs again from scratch; every
//! stage writes its files atomically and is deterministic, so the resumed build ends with the
//! same bytes an uninterrupted one would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// What a checkpoint file records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    pub step: String,
    pub key: String,
    /// Seconds the step took when it ran.
    pub seconds: f64,
    /// The process's peak resident memory during the step, in MiB (Linux only).
    #[serde(default)]
    pub peak_rss_mib: Option<f64>,
    /// The resident memory when the step started, in MiB (Linux only).
    #[serde(default)]
    pub start_rss_mib: Option<f64>,
    /// One line on what it made.
    pub detail: String,
}

/// How a step ended in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepStatus {
    Ran,
    /// Complete from an earlier run with the same key.
    Reused,
}

/// One step of a build, for the summary and the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StepRecord {
    pub step: String,
    pub status: StepStatus,
    pub seconds: f64,
    pub peak_rss_mib: Option<f64>,
    pub start_rss_mib: Option<f64>,
    pub detail: String,
    pub key: String,
}

/// The key of a step: its name, its parameters (any JSON), and the keys it depends on.
pub(crate) fn key(step: &str, params: &serde_json::Value, upstream: &[&str]) -> String {
    // Length-prefixed parts, so no two different part lists hash the same text.
    let text: String = [
        step,
        env!("CARGO_PKG_VERSION"),
        &params.to_string(),
        &upstream.join(","),
    ]
    .iter()
    .map(|p| format!("{}:{p};", p.len()))
    .collect();
    crate::config::short_hash(&text)
}

/// The checkpoints of one work folder.
#[derive(Debug, Clone)]
pub(crate) struct Checkpoints {
    dir: PathBuf,
    pub records: Vec<StepRecord>,
}

impl Checkpoints {
    pub fn new(work: &Path) -> Self {
        Self {
            dir: work.join("checkpoints"),
            records: Vec::new(),
        }
    }

    fn file(&self, step: &str) -> PathBuf {
        self.dir.join(format!("{step}.json"))
    }

    /// The checkpoint of `step` when it matches `key`.
    /// Drops `step`'s record: another step is about to write where it wrote.
    pub(crate) fn forget(&self, step: &str) -> Result<()> {
        let f = self.file(step);
        match std::fs::remove_file(&f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&f, e)),
            _ => Ok(()),
        }
    }

    pub fn done(&self, step: &str, key: &str) -> Option<Checkpoint> {
        let text =
            crate::store::input::read_to_string(&self.file(step), crate::store::input::METADATA)
                .ok()?;
        let c: Checkpoint = serde_json::from_str(&text).ok()?;
        (c.key == key).then_some(c)
    }

    /// Why `step` must run: it never completed, or what it depends on changed.
    fn why_run(&self, step: &str, key: &str) -> String {
        let text =
            crate::store::input::read_to_string(&self.file(step), crate::store::input::METADATA);
        match text
            .ok()
            .and_then(|t| serde_json::from_str::<Checkpoint>(&t).ok())
        {
            None => "no earlier run completed it".into(),
            Some(c) => format!(
                "its settings, inputs or tool version changed since it last completed (key {} \
                 → {key})",
                c.key
            ),
        }
    }

    /// Runs `f` unless `step` is complete with `key`. `outputs` are removed before a (re)run,
    /// so nothing a killed run left behind survives. `f` returns the detail line.
    pub fn step(
        &mut self,
        step: &str,
        key: &str,
        outputs: &[&Path],
        f: impl FnOnce() -> Result<String>,
    ) -> Result<()> {
        let n = self.records.len() + 1;
        if let Some(c) = self.done(step, key) {
            eprintln!("[{n}] {step}: complete from an earlier run ({})", c.detail);
            self.records.push(StepRecord {
                step: step.into(),
                status: StepStatus::Reused,
                seconds: c.seconds,
                peak_rss_mib: c.peak_rss_mib,
                start_rss_mib: c.start_rss_mib,
                detail: c.detail,
                key: key.into(),
            });
            return Ok(());
        }
        log::info!("{step}: runs, {}", self.why_run(step, key));
        for o in outputs {
            remove(o)?;
        }
        eprintln!("[{n}] {step} …");
        let t0 = Instant::now();
        let probe = super::memory::StepProbe::start();
        let detail = f().map_err(|e| Error::Stage {
            stage: step.into(),
            source: Box::new(e),
        });
        let (start_rss_mib, peak_rss_mib) = probe.finish();
        let detail = detail?;
        let seconds = t0.elapsed().as_secs_f64();
        let rss = peak_rss_mib.map_or(String::new(), |m| format!(", peak RSS {m:.0} MiB"));
        eprintln!("[{n}] {step}: {detail} ({seconds:.1} s{rss})");
        let c = Checkpoint {
            step: step.into(),
            key: key.into(),
            seconds,
            peak_rss_mib,
            start_rss_mib,
            detail: detail.clone(),
        };
        let json = serde_json::to_string_pretty(&c).unwrap_or_default() + "\n";
        write_atomic(&self.file(step), json.as_bytes())?;
        self.records.push(StepRecord {
            step: step.into(),
            status: StepStatus::Ran,
            seconds,
            peak_rss_mib,
            start_rss_mib,
            detail,
            key: key.into(),
        });
        Ok(())
    }
}

/// Removes a step's earlier output, only what drivegen recorded writing.
fn remove(p: &Path) -> Result<()> {
    crate::store::owner::remove_output(p)
}
