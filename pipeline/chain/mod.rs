//! `drivegen build CONFIG.toml`: one command from a source dataset (or the synthetic corpus) to
//! a release folder with its report.
//!
//! The build is a chain of checkpointed steps (see [`checkpoint`]): corpus → scene store →
//! ego motion, visibility, Set-of-Mark, corruptions (per scene) → per-family tables →
//! balancing → Parquet release → report. Each step reads the tables of the steps before it and
//! writes its own folder under the work folder; a killed build resumes at the first step that
//! is not complete and ends byte-identical to an uninterrupted one.
//!
//! `--shard i/N` runs the per-scene steps on the scenes shard `i` owns (a store holding only
//! those, see [`crate::store::subset`]) under `work/shard-i-of-N/`; `--merge N` then runs the
//! global steps over all N shards' tables. Global steps order rows canonically, so the merged
//! release has the bytes of an unsharded one.
//!
//! The rooms: `source` (the corpus and the ingest), `scene` (the per-scene steps),
//! `release` (per-family tables, the release, its audit and checks), [`config`] (the TOML),
//! [`checkpoint`] (keys and resume), [`honesty`] (the per-family promises), [`report`] (the report,
//! its plots drawn by [`crate::svg`]), [`memory`] (peak-RSS probes).

pub(crate) mod checkpoint;
pub(crate) mod config;
pub(crate) mod honesty;
pub(crate) mod memory;
mod release;
pub(crate) mod report;
mod scene;
mod source;

use crate::store::lock::FolderLock;
use crate::store::owner::Owned;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::json;

use self::checkpoint::{key, Checkpoints, StepRecord};
use self::config::BuildConfig;
use self::release::{contact_sheet, global_steps, outputs_for_report, validate, viewer};
use self::scene::{scene_outputs, scene_steps};
use self::source::source_store;
use crate::shard::Shard;
use crate::store::atomic::write_atomic;
use crate::store::Store;
use crate::{Error, Result};

/// How to run a build.
#[derive(Debug, Clone)]
pub(crate) struct BuildOptions {
    pub config: BuildConfig,
    /// The config's text (hashed into the manifest).
    pub config_text: String,
    pub out: PathBuf,
    pub work: PathBuf,
    /// Run only the per-scene steps for this shard.
    pub shard: Option<Shard>,
    /// Run the global steps over this many shards' outputs.
    pub merge: Option<u32>,
    /// Also write the images the release draws under this folder.
    pub keep_images: Option<PathBuf>,
}

impl BuildOptions {
    pub fn new(config: BuildConfig, config_text: String) -> Self {
        Self {
            out: config.out.clone(),
            work: config.work_dir(),
            config,
            config_text,
            shard: None,
            merge: None,
            keep_images: None,
        }
    }
}

/// What a build did.
#[derive(Debug, Clone)]
pub(crate) struct BuildSummary {
    pub steps: Vec<StepRecord>,
    pub out: PathBuf,
    /// The release's row counts per family and type (none for a shard build).
    pub counts: BTreeMap<String, BTreeMap<String, usize>>,
    pub report: Option<PathBuf>,
    /// The release viewer's page, when the build wrote one.
    pub viewer: Option<PathBuf>,
    /// Every non-empty rejects log under the release and the work folder, with its count of
    /// rejected items.
    pub rejects: Vec<(PathBuf, usize)>,
}

/// Folder levels searched for rejects logs (stage outputs sit at most three deep in a work
/// folder: `shard-i-of-N/<stage>/rejects.jsonl`).
const REJECTS_DEPTH: usize = 3;

/// The non-empty rejects logs under `dirs`, sorted, with their line counts. Unreadable
/// folders are skipped: this only points the user at logs.
fn reject_logs(dirs: &[&Path]) -> Vec<(PathBuf, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = dirs.iter().map(|d| (d.to_path_buf(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && depth < REJECTS_DEPTH {
                stack.push((path, depth + 1));
            } else if kind.is_file() && e.file_name() == crate::store::rejects::LOG_FILE {
                let n = std::fs::read_to_string(&path)
                    .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
                    .unwrap_or(0);
                if n > 0 {
                    out.push((path, n));
                }
            }
        }
    }
    out.sort();
    out
}

impl fmt::Display for BuildSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<22} {:>8} {:>9} {:>16}  what",
            "step", "status", "seconds", "peak MiB (step)"
        )?;
        for s in &self.steps {
            let status = match s.status {
                checkpoint::StepStatus::Ran => "ran",
                checkpoint::StepStatus::Reused => "reused",
            };
            let rss = match (s.peak_rss_mib, s.start_rss_mib) {
                (Some(p), Some(s)) => format!("{p:.0} (+{:.0})", p - s),
                (Some(p), None) => format!("{p:.0}"),
                _ => "-".into(),
            };
            writeln!(
                f,
                "{:<22} {:>8} {:>9.1} {:>16}  {}",
                s.step, status, s.seconds, rss, s.detail
            )?;
        }
        let total: usize = self.counts.values().flat_map(|t| t.values()).sum();
        if !self.counts.is_empty() {
            writeln!(f, "questions: {total}")?;
            for (family, types) in &self.counts {
                writeln!(
                    f,
                    "  {family}: {} in {} types",
                    types.values().sum::<usize>(),
                    types.len()
                )?;
            }
        }
        writeln!(f, "output: {}", self.out.display())?;
        if let Some(r) = &self.report {
            writeln!(f, "report: {}", r.display())?;
        }
        if let Some(v) = &self.viewer {
            writeln!(f, "viewer: {}", v.display())?;
        }
        if self.rejects.is_empty() {
            writeln!(f, "rejects: none")?;
        } else {
            let n: usize = self.rejects.iter().map(|(_, n)| n).sum();
            writeln!(f, "rejects: {n} items, each with its reason, in")?;
            for (p, n) in &self.rejects {
                writeln!(f, "  {} ({n})", p.display())?;
            }
        }
        Ok(())
    }
}

fn file_text(p: &Option<PathBuf>) -> Result<Option<String>> {
    p.as_ref()
        .map(|p| crate::store::input::read_to_string(p, crate::store::input::CONFIG))
        .transpose()
}

/// Runs the build.
pub fn run(opts: &BuildOptions) -> Result<BuildSummary> {
    if opts.shard.is_some() && opts.merge.is_some() {
        return Err(Error::invalid("--shard and --merge", "exclude each other"));
    }
    if opts.merge == Some(0) {
        return Err(Error::invalid(
            "--merge N",
            "N is the number of shards the build was split into, at least 1",
        ));
    }
    check_folders(opts)?;
    if let Some(shard) = opts.shard {
        return shard_build(opts, shard);
    }
    // Locked and marked: two builds on one work folder would interleave their steps, and a
    // folder holding someone else's files is refused before anything is written.
    let _work = Owned::claim_work(&opts.work, false)?;
    let _out = Owned::claim(
        &opts.out,
        "release",
        "the release (data/, manifest.json, README.md, report)",
    )?;
    let mut cp = Checkpoints::new(&opts.work);
    let (store, store_key) = source_store(opts, &mut cp)?;
    // The merge holds every shard's folder while it reads them.
    let mut idle = Vec::new();
    let outputs = match opts.merge {
        Some(n) => (0..n)
            .map(|i| {
                let shard = Shard { index: i, count: n };
                let dir = shard_dir(&opts.work, shard);
                if !dir.join("shard.json").is_file() {
                    return Err(Error::Refused {
                        path: dir.clone(),
                        why: format!(
                            "has no shard.json: --merge {n}: shard {shard} is not complete; run \
                             `drivegen build CONFIG --shard {shard}` first"
                        ),
                    });
                }
                // A task still running (or requeued) holds its folder; its tables may be
                // half written.
                idle.push(
                    FolderLock::acquire(&dir, "merge").map_err(|_| Error::Refused {
                        path: dir.clone(),
                        why: format!(
                            "--merge {n}: shard {shard} is still running; merge once every \
                             task has finished"
                        ),
                    })?,
                );
                let sub = dir.join("store");
                let k = shard_store_key(shard, &store_key);
                same_build(&dir, shard, opts, &k)?;
                scene_outputs(opts, &sub, &k, &dir)
            })
            .collect::<Result<Vec<_>>>()?,
        None => vec![scene_steps(
            opts, &mut cp, &store, &store_key, &opts.work, "",
        )?],
    };
    let counts = global_steps(opts, &mut cp, &outputs)?;
    if opts.config.stages.corrupt {
        contact_sheet(opts, &mut cp, &outputs)?;
    }
    let report = opts.out.join("report.html");
    report::write(opts, &cp.records, &outputs_for_report(&outputs), &report)?;
    validate(opts, &mut cp)?;
    let viewer = viewer(opts, &mut cp)?;
    Ok(BuildSummary {
        steps: cp.records,
        out: opts.out.clone(),
        counts,
        report: Some(report),
        viewer,
        rejects: reject_logs(&[&opts.out, &opts.work]),
    })
}

/// The per-scene steps of one shard. The tasks of an array share the work folder: each takes
/// it in turn (waiting, not refusing) to build or reuse the source store, then works under
/// `shard-i-of-N/` alone, which it holds for the rest of its run, so the tasks run side by side
/// and a second task for the same shard is refused.
fn shard_build(opts: &BuildOptions, shard: Shard) -> Result<BuildSummary> {
    let mut cp = Checkpoints::new(&opts.work);
    let dir = shard_dir(&opts.work, shard);
    let (store, store_key, _mine) = {
        let work = Owned::claim_work(&opts.work, true)?;
        let (store, store_key) = source_store(opts, &mut cp)?;
        let mine = Owned::claim(&dir, "shard work folder", "this shard's steps")?;
        // Recorded in the work folder's marker while it is held, so the merge and the other
        // tasks see the shard's folder as drivegen's.
        work.finish()?;
        (store, store_key, mine)
    };
    // A rerun (a requeued task, a changed config) is not complete until it says so again.
    let marker = dir.join("shard.json");
    crate::store::owner::remove_output(&marker)?;
    let sub = dir.join("store");
    let k = shard_store_key(shard, &store_key);
    cp.step(
        &format!("shard_store_{}_of_{}", shard.index, shard.count),
        &k,
        &[&sub],
        || {
            let src = Store::open(&store)?;
            let plan = src.shard_plan(shard.count)?;
            let m = crate::store::subset::write_shard(&src, &plan, &sub, shard)?;
            let loads = plan.loads();
            let mean = loads.iter().sum::<u64>() as f64 / loads.len().max(1) as f64;
            Ok(format!(
                "{} of the store's {} scenes, cost {} (the mean shard's {:.0}, the largest's {})",
                m.counts.scenes,
                plan.scenes(),
                loads.get(shard.index as usize).copied().unwrap_or(0),
                mean,
                loads.iter().max().copied().unwrap_or(0)
            ))
        },
    )?;
    let out = scene_steps(opts, &mut cp, &sub, &k, &dir, &format!("_{}", shard.index))?;
    let json = json!({
        "shard": shard.to_string(),
        "keys": out.keys,
        "config_hash": BuildConfig::hash_of(&opts.config_text),
        "store_key": k,
    });
    write_atomic(&marker, (json.to_string() + "\n").as_bytes())?;
    Ok(BuildSummary {
        steps: cp.records,
        rejects: reject_logs(&[&dir]),
        out: dir,
        counts: BTreeMap::new(),
        report: None,
        viewer: None,
    })
}

/// Refuses to merge a shard folder built from another config or another plan: its scenes and
/// questions would enter the release beside this build's, and the release would validate.
fn same_build(dir: &Path, shard: Shard, opts: &BuildOptions, store_key: &str) -> Result<()> {
    let path = dir.join("shard.json");
    let text = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::json(&path, e))?;
    let hash = BuildConfig::hash_of(&opts.config_text);
    let stranger = |what: &str, had: &serde_json::Value, want: &str| Error::Input {
        file: path.clone(),
        record: what.to_string(),
        detail: format!(
            "shard {shard} was built from another {} ({had}, this build's is {want:?}); \
             rebuild it with `drivegen build CONFIG --shard {shard}` using this config",
            if what == "config_hash" {
                "config"
            } else {
                "plan of the source store"
            }
        ),
    };
    if v["shard"].as_str() != Some(shard.to_string().as_str()) {
        return Err(stranger("shard", &v["shard"], &shard.to_string()));
    }
    if v["config_hash"].as_str() != Some(hash.as_str()) {
        return Err(stranger("config_hash", &v["config_hash"], &hash));
    }
    if v["store_key"].as_str() != Some(store_key) {
        return Err(stranger("store_key", &v["store_key"], store_key));
    }
    Ok(())
}

/// The dataset, the work folder and the release must not be the same folder or nested.
fn check_folders(opts: &BuildOptions) -> Result<()> {
    use crate::chain::config::InputConfig;
    use crate::store::paths::disjoint;
    disjoint(&opts.work, "the work folder", &opts.out, "the release")?;
    let input = match &opts.config.input {
        InputConfig::Nuscenes { root, .. }
        | InputConfig::Waymo { root, .. }
        | InputConfig::Carla { root, .. } => Some((root, "the dataset root")),
        InputConfig::Store { path } => Some((path, "the input store")),
        InputConfig::Synth { .. } => None,
    };
    if let Some((p, what)) = input {
        disjoint(p, what, &opts.work, "the work folder")?;
        disjoint(p, what, &opts.out, "the release")?;
    }
    Ok(())
}

/// The key of a shard's store: which shard, of which source store, under which split.
fn shard_store_key(shard: Shard, store_key: &str) -> String {
    key(
        "shard_store",
        &json!({"shard": shard.to_string(), "balanced_by": "cost",
                "boxes_per_image": crate::shard::BOXES_PER_IMAGE_COST}),
        &[store_key],
    )
}

fn shard_dir(work: &Path, shard: Shard) -> PathBuf {
    work.join(format!("shard-{}-of-{}", shard.index, shard.count))
}

fn first_line(summary: &impl fmt::Display) -> String {
    summary.to_string().lines().next().unwrap_or("").to_string()
}

/// The step detail's note of the items a stage skipped for unusable images, if any.
fn skipped(n: u64, what: &str, out: &Path) -> String {
    if n == 0 {
        return String::new();
    }
    format!(
        "; {n} {what} skipped (unusable images, see {})",
        out.join(crate::store::rejects::LOG_FILE).display()
    )
}
