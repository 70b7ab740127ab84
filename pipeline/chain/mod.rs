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

pub mod checkpoint;
pub mod config;
pub mod honesty;
pub mod memory;
pub mod report;
pub mod svg;

use crate::config::StageConfig;
use crate::store::lock::FolderLock;
use crate::store::owner::Owned;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::Digest as _;

use self::checkpoint::{key, Checkpoints, StepRecord};
use self::config::{BuildConfig, CameraSweeps, FamilyBalance, InputConfig, SynthFormat};
use crate::shard::Shard;
use crate::store::atomic::write_atomic;
use crate::store::paths::Links;
use crate::store::Store;
use crate::{Error, Result};

/// How to run a build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
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
pub struct BuildSummary {
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

/// The per-scene outputs of one store (the whole dataset or one shard).
#[derive(Debug, Clone)]
struct SceneOutputs {
    store: PathBuf,
    /// family → QA tables.
    qa: BTreeMap<String, Vec<PathBuf>>,
    /// Folders that rows' `image_paths` are relative to.
    image_dirs: Vec<PathBuf>,
    som_dir: Option<PathBuf>,
    /// Keys of the steps that made these outputs.
    keys: Vec<String>,
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

/// The cameras whose sweeps the synthetic corpus gets (None: every camera's).
fn sweep_cameras(c: &BuildConfig, which: CameraSweeps) -> Result<Option<Vec<String>>> {
    Ok(match which {
        CameraSweeps::All => None,
        CameraSweeps::Used if c.stages.egomotion => {
            let e = crate::egomotion::config::EgodynConfig::load(c.egomotion.config.as_deref())?;
            Some(vec![e.clips.camera])
        }
        CameraSweeps::Used => Some(Vec::new()),
    })
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

/// The scene store to build from (synthesised and ingested when the input asks).
fn source_store(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<(PathBuf, String)> {
    let w = &opts.work;
    match &opts.config.input {
        InputConfig::Store { path } => {
            let meta =
                crate::store::input::read(&path.join("store.json"), crate::store::input::METADATA)?;
            let k = key(
                "store",
                &json!({"store_json": String::from_utf8_lossy(&meta)}),
                &[],
            );
            Ok((path.clone(), k))
        }
        InputConfig::Synth {
            scenes,
            duration_s,
            width,
            height,
            format,
            camera_sweeps,
        } => {
            let corpus = w.join("corpus");
            let d = crate::synth::SynthOptions::default();
            let so = crate::synth::SynthOptions {
                scenes: *scenes,
                seed: opts.config.seed,
                duration_s: duration_s.unwrap_or(d.duration_s),
                image_width: width.unwrap_or(d.image_width),
                image_height: height.unwrap_or(d.image_height),
                sweep_cameras: sweep_cameras(&opts.config, *camera_sweeps)?,
                ..d
            };
            let mut params = json!({"scenes": so.scenes, "seed": so.seed,
                                    "duration_s": so.duration_s,
                                    "w": so.image_width, "h": so.image_height});
            // nuScenes keeps the key it had before formats existed.
            if *format != SynthFormat::Nuscenes {
                params["format"] = json!(format);
            }
            if let Some(c) = &so.sweep_cameras {
                params["camera_sweeps"] = json!(c);
            }
            let ck = key("corpus", &params, &[]);
            cp.step("corpus", &ck, &[&corpus], || {
                Ok(match format {
                    SynthFormat::Nuscenes => {
                        first_line(&crate::synth::write_nuscenes(&corpus, &so)?)
                    }
                    SynthFormat::WaymoV2 => first_line(&crate::synth::waymo::write(
                        &corpus,
                        &crate::synth::waymo::WaymoSynthOptions {
                            base: so.clone(),
                            ..Default::default()
                        },
                    )?),
                    SynthFormat::Bench2drive => {
                        first_line(&crate::synth::bench2drive::write(&corpus, &so)?)
                    }
                })
            })?;
            let source = match format {
                SynthFormat::Nuscenes => Source::Nuscenes(so.version.clone()),
                SynthFormat::WaymoV2 => Source::Waymo,
                SynthFormat::Bench2drive => Source::Carla,
            };
            ingest(cp, &corpus, &source, Links::Follow, w, &ck)
        }
        InputConfig::Nuscenes {
            root,
            version,
            strict_links,
        } => {
            let version = match version {
                Some(v) => v.clone(),
                None => crate::ingest::nuscenes::only_version(root)?,
            };
            let k = key(
                "source",
                &source_params(json!({"root": root, "version": version}), *strict_links),
                &[],
            );
            let links = Links::strict_if(*strict_links);
            ingest(cp, root, &Source::Nuscenes(version), links, w, &k)
        }
        InputConfig::Waymo { root, strict_links } => {
            let k = key(
                "source",
                &source_params(json!({"kind": "waymo", "root": root}), *strict_links),
                &[],
            );
            ingest(
                cp,
                root,
                &Source::Waymo,
                Links::strict_if(*strict_links),
                w,
                &k,
            )
        }
        InputConfig::Carla { root, strict_links } => {
            let k = key(
                "source",
                &source_params(json!({"kind": "carla", "root": root}), *strict_links),
                &[],
            );
            ingest(
                cp,
                root,
                &Source::Carla,
                Links::strict_if(*strict_links),
                w,
                &k,
            )
        }
    }
}

/// A source's key parameters; strict links are named only when set, so a lenient build keeps
/// the key it had before the mode existed.
fn source_params(mut params: serde_json::Value, strict_links: bool) -> serde_json::Value {
    if strict_links {
        params["strict_links"] = json!(true);
    }
    params
}

/// The layout of a source folder to ingest.
enum Source {
    /// nuScenes, with its version.
    Nuscenes(String),
    Waymo,
    Carla,
}

fn ingest(
    cp: &mut Checkpoints,
    root: &Path,
    source: &Source,
    links: Links,
    work: &Path,
    upstream: &str,
) -> Result<(PathBuf, String)> {
    let store = work.join("store");
    let k = match source {
        Source::Nuscenes(version) => key("ingest", &json!({"version": version}), &[upstream]),
        Source::Waymo => key("ingest", &json!({"source": "waymo"}), &[upstream]),
        Source::Carla => key("ingest", &json!({"source": "carla"}), &[upstream]),
    };
    cp.step("ingest", &k, &[&store], || {
        // An absolute root keeps the store's image paths valid from any working folder.
        let root = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
        let taxonomy = crate::taxonomy::Taxonomy::load(None)?;
        let s = match source {
            Source::Nuscenes(version) => {
                crate::ingest::nuscenes::ingest(&crate::ingest::nuscenes::IngestOptions {
                    root: root.clone(),
                    version: version.clone(),
                    out: store.clone(),
                    taxonomy,
                    rules: Default::default(),
                    chunk_scenes: 8,
                    links,
                })?
            }
            Source::Waymo => {
                crate::ingest::waymo::run(&crate::ingest::waymo::Options {
                    root: root.clone(),
                    out: store.clone(),
                    taxonomy,
                    config: crate::ingest::sources::SourcesConfig::load(None)?,
                    links,
                })?
                .ingest
            }
            Source::Carla => crate::ingest::carla::run(&crate::ingest::carla::Options {
                root: root.clone(),
                out: store.clone(),
                taxonomy,
                config: crate::ingest::sources::SourcesConfig::load(None)?,
                links,
            })?,
        };
        if s.scenes_written == 0 {
            return Err(Error::not_found(root, "scene could be ingested"));
        }
        Ok(format!(
            "{}/{} scenes, {} rejected",
            s.scenes_written,
            s.scenes_total,
            s.rejects.len()
        ))
    })?;
    Ok((store, k))
}

/// The keys and paths of the per-scene steps for one store (without running them).
fn scene_plan(opts: &BuildOptions, store_key: &str, dir: &Path) -> Result<ScenePlan> {
    let c = &opts.config;
    let ego = key(
        "egomotion",
        &json!({"config": file_text(&c.egomotion.config)?}),
        &[store_key],
    );
    let vis = key(
        "visibility",
        &json!({"config": file_text(&c.visibility.config)?}),
        &[store_key],
    );
    let som = key(
        "som",
        &json!({"config": file_text(&c.som.config)?, "vis": file_text(&c.visibility.config)?}),
        &[&vis],
    );
    let corrupt = key(
        "corrupt",
        &json!({"config": file_text(&c.corrupt.config)?, "corruptions": c.corrupt.corruptions,
                "severity": c.corrupt.severity, "frames_per_scene": c.corrupt.frames_per_scene,
                "seed": c.seed}),
        &[store_key],
    );
    let sts = key(
        "stsbench",
        &json!({"config": file_text(&c.stsbench.config)?, "maps": c.stsbench.maps, "seed": c.seed}),
        &[store_key],
    );
    let sig = key(
        "sig",
        &json!({"config": file_text(&c.sig.config)?, "seed": c.seed}),
        &[&vis],
    );
    let metavqa = key(
        "metavqa",
        &json!({"config": file_text(&c.metavqa.config)?, "som": file_text(&c.som.config)?,
                "seed": c.seed}),
        &[&vis],
    );
    Ok(ScenePlan {
        metavqa: (metavqa, dir.join("metavqa")),
        ego: (ego, dir.join("egodyn")),
        vis: (vis, dir.join("visibility")),
        som: (som, dir.join("som")),
        corrupt: (corrupt, dir.join("corrupt")),
        sts: (sts, dir.join("stsbench")),
        sig: (sig, dir.join("sig")),
    })
}

struct ScenePlan {
    metavqa: (String, PathBuf),
    ego: (String, PathBuf),
    vis: (String, PathBuf),
    som: (String, PathBuf),
    corrupt: (String, PathBuf),
    sts: (String, PathBuf),
    sig: (String, PathBuf),
}

/// What the per-scene steps of a store produce, as paths (for `--merge`).
fn scene_outputs(
    opts: &BuildOptions,
    store: &Path,
    store_key: &str,
    dir: &Path,
) -> Result<SceneOutputs> {
    let p = scene_plan(opts, store_key, dir)?;
    let st = opts.config.stages;
    let mut o = SceneOutputs {
        store: store.to_path_buf(),
        qa: BTreeMap::new(),
        image_dirs: Vec::new(),
        som_dir: None,
        keys: vec![store_key.to_string()],
    };
    if st.egomotion {
        o.qa.entry("egodyn".into())
            .or_default()
            .push(p.ego.1.join(crate::egomotion::QA_FILE));
        o.keys.push(p.ego.0);
    }
    if st.visibility || st.som || st.sig || st.metavqa {
        o.keys.push(p.vis.0);
    }
    if st.metavqa {
        o.qa.entry("metavqa".into())
            .or_default()
            .push(p.metavqa.1.join("metavqa_qa.arrow"));
        o.image_dirs.push(p.metavqa.1);
        o.keys.push(p.metavqa.0);
    }
    if st.stsbench {
        o.qa.entry("stsbench".into())
            .or_default()
            .push(p.sts.1.join(crate::stsbench::QA_FILE));
        o.keys.push(p.sts.0);
    }
    if st.sig {
        o.qa.entry("sig".into())
            .or_default()
            .push(p.sig.1.join(crate::sig::QA_FILE));
        o.keys.push(p.sig.0);
    }
    if st.som {
        o.som_dir = Some(p.som.1);
        o.keys.push(p.som.0);
    }
    if st.corrupt {
        o.qa.entry("drivebench".into())
            .or_default()
            .push(p.corrupt.1.join("corruption_qa.arrow"));
        o.image_dirs.push(p.corrupt.1);
        o.keys.push(p.corrupt.0);
    }
    Ok(o)
}

/// Runs the per-scene steps on one store; `suffix` tells shards' steps apart. It is one block
/// per step (its checkpoint, then the stage call), in the order the steps depend on each other;
/// the blocks share the plan and the checkpoints, so the order is kept in one place rather than
/// split over helpers.
fn scene_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    store: &Path,
    store_key: &str,
    dir: &Path,
    suffix: &str,
) -> Result<SceneOutputs> {
    let c = &opts.config;
    let p = scene_plan(opts, store_key, dir)?;
    if c.stages.egomotion {
        let (k, out) = &p.ego;
        cp.step(&format!("egomotion{suffix}"), k, &[out], || {
            let opts =
                crate::egomotion::EgomotionOptions::new(store, out, c.egomotion.config.as_deref())?;
            let s = crate::egomotion::run(&opts)?;
            Ok(first_line(&s))
        })?;
    }
    let vis_file = p.vis.1.join("visibility.arrow");
    if c.stages.visibility || c.stages.som || c.stages.sig || c.stages.metavqa {
        let (k, out) = &p.vis;
        cp.step(&format!("visibility{suffix}"), k, &[out], || {
            let r = crate::visibility::rasteriser(c.visibility.device)?;
            let s = crate::visibility::run(&crate::visibility::VisibilityOptions {
                rasteriser: r.as_ref(),
                ..crate::visibility::VisibilityOptions::new(
                    store,
                    &vis_file,
                    c.visibility.config.as_deref(),
                )?
            })?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.som {
        let (k, out) = &p.som;
        cp.step(&format!("som{suffix}"), k, &[out], || {
            let cfg = crate::som::SomConfig::load(c.som.config.as_deref())?;
            let vis_cfg =
                crate::visibility::config::VisibilityConfig::load(c.visibility.config.as_deref())?;
            let r = crate::visibility::rasteriser(c.som.device)?;
            let s = crate::som::run(&crate::som::Options {
                store,
                visibility: &vis_file,
                out,
                config: &cfg,
                visibility_config: &vis_cfg,
                rasteriser: r.as_ref(),
                scene: None,
                images: false,
            })?;
            Ok(first_line(&s) + &skipped(s.rejected_images, "images", out))
        })?;
    }
    if c.stages.metavqa {
        let (k, out) = &p.metavqa;
        cp.step(&format!("metavqa{suffix}"), k, &[out], || {
            let mut config = crate::metavqa::MetavqaConfig::load(c.metavqa.config.as_deref())?;
            config.seed = c.seed;
            let o = crate::metavqa::Options {
                store: store.to_path_buf(),
                visibility: vis_file.clone(),
                out: out.clone(),
                config,
                som: crate::som::SomConfig::load(c.som.config.as_deref())?,
                gpu: crate::gpu::device::open(c.metavqa.device)?,
                images: false,
                scene: None,
            };
            let s = crate::metavqa::run(&o)?;
            Ok(first_line(&s) + &skipped(s.rejected_images, "images", out))
        })?;
    }
    if c.stages.stsbench {
        let (k, out) = &p.sts;
        cp.step(&format!("stsbench{suffix}"), k, &[out], || {
            let o = crate::stsbench::StsOptions {
                store: store.to_path_buf(),
                out: out.clone(),
                config: crate::stsbench::config::StsConfig::load(c.stsbench.config.as_deref())?,
                seed: c.seed,
                maps: c.stsbench.maps.clone(),
            };
            let s = crate::stsbench::run(&o)?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.sig {
        let (k, out) = &p.sig;
        cp.step(&format!("sig{suffix}"), k, &[out], || {
            let o = crate::sig::SigOptions {
                store: store.to_path_buf(),
                visibility: vis_file.clone(),
                out: out.clone(),
                config: crate::sig::config::SigConfig::load(c.sig.config.as_deref())?,
                seed: c.seed,
            };
            let s = crate::sig::run(&o)?;
            Ok(first_line(&s))
        })?;
    }
    if c.stages.corrupt {
        let (k, out) = &p.corrupt;
        cp.step(&format!("corrupt{suffix}"), k, &[out], || {
            use crate::corrupt::run as cr;
            let corruptions = cr::parse_corruptions(&c.corrupt.corruptions)?;
            let gpu = if corruptions.iter().all(|c| c.is_codec()) {
                None
            } else {
                crate::gpu::device::open(c.corrupt.device)?
            };
            let o = cr::CorruptOptions {
                input: cr::Input::Store(store.to_path_buf()),
                out: out.clone(),
                corruptions,
                severities: cr::parse_severities(&c.corrupt.severity)?,
                seed: c.seed,
                config: crate::corrupt::CorruptConfig::load(c.corrupt.config.as_deref())?,
                gpu,
                max_frames: None,
                frames_per_scene: c.corrupt.frames_per_scene,
                images: false,
            };
            let s = cr::run(&o)?;
            Ok(format!(
                "{} frames, {} images ({} written), {} questions on {}{}",
                s.frames,
                s.images_out,
                s.images_written,
                s.questions,
                s.device,
                skipped(s.rejected_frames as u64, "frames", out)
            ))
        })?;
    }
    scene_outputs(opts, store, store_key, dir)
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

/// Balancing, the release and its manifest; returns the release's counts.
fn global_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<BTreeMap<String, BTreeMap<String, usize>>> {
    let c = &opts.config;
    let (family_keys, kept) = family_steps(opts, cp, outputs)?;
    let rows = honesty::count(&produced(outputs), &kept)?;
    honesty::check_kept(c, &opts.out, &rows)?;
    // In family name order, as the steps ran.
    let release_inputs = kept.values().map(|(_, file)| file.clone()).collect();
    let mut ro = release_options(opts, outputs, release_inputs)?;
    let fk: Vec<&str> = family_keys.iter().map(String::as_str).collect();
    let robust_config = match &c.robustness {
        Some(r) => file_text(&r.config.clone().or_else(|| c.corrupt.config.clone()))?,
        None => None,
    };
    let k = key(
        "release",
        &json!({"config": opts.config_text, "release": c.release, "keep_images": opts.keep_images,
                "corruptions": robust_config}),
        &fk,
    );
    // The release replaces its own shards and removes stale ones itself; the rest of `data/`
    // is not drivegen's to delete.
    cp.step("release", &k, &[], || {
        // Marked and corrupted images are drawn on the device of the stages that planned them
        // (opened here: a release step that is reused needs none).
        if let Some(r) = &c.robustness {
            ro.gpu = crate::gpu::device::open(r.device)?;
        } else if c.stages.corrupt || c.stages.metavqa {
            let device = if c.stages.corrupt {
                c.corrupt.device
            } else {
                c.metavqa.device
            };
            ro.gpu = crate::gpu::device::open(device)?;
        }
        let s = crate::release::run(&ro)?;
        add_build_to_manifest(opts)?;
        // The blind baselines of what was just written go into the manifest and the report.
        let a = crate::release::blind::audit(&opts.out)?;
        crate::release::blind::write_audit(&opts.out, &a)?;
        let worst = a
            .families
            .iter()
            .map(|(f, b)| (b.excess(), f))
            .max_by(|x, y| x.0.total_cmp(&y.0));
        Ok(format!(
            "{} rows, {} images, {} shards; largest blind excess over chance {}",
            s.rows,
            s.images,
            s.shards.len(),
            worst.map_or("–".into(), |(e, f)| format!("{e:+.3} ({f})"))
        ))
    })?;
    let counts = release_counts(opts);
    honesty::check_released(c, &opts.out, &counts, &rows)?;
    honesty::check_margins(c, &opts.out)?;
    Ok(counts)
}

/// Per QA family, the tables the per-scene steps wrote for it.
fn produced(outputs: &[SceneOutputs]) -> BTreeMap<String, Vec<PathBuf>> {
    let mut families: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for o in outputs {
        for (f, files) in &o.qa {
            families.entry(f.clone()).or_default().extend(files.clone());
        }
    }
    families
}

/// One step per QA family, in name order: balancing where the config has a spec for the
/// family, plain gathering otherwise. Returns the steps' keys, which the release's key depends
/// on, and per family the step and the file that kept its rows (the release's inputs).
fn family_steps(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<FamilySteps> {
    let c = &opts.config;
    let upstream: Vec<String> = outputs.iter().flat_map(|o| o.keys.clone()).collect();
    let up: Vec<&str> = upstream.iter().map(String::as_str).collect();
    let families = produced(outputs);
    let mut family_keys = Vec::new();
    let mut kept = BTreeMap::new();
    for (family, files) in &families {
        let dir = opts.work.join("families").join(family);
        let k = match c.balance.get(family) {
            Some(b) => {
                let k = key("balance", &serde_json::to_value(b).unwrap_or_default(), &up);
                // Balancing and gathering write one folder: the other's record no longer holds.
                cp.forget(&format!("gather_{family}"))?;
                cp.step(&format!("balance_{family}"), &k, &[&dir], || {
                    balance_family(b, files, &dir)
                })?;
                kept.insert(
                    family.clone(),
                    (format!("balance_{family}"), dir.join("balanced_qa.arrow")),
                );
                k
            }
            None => {
                let k = key("gather", &json!({}), &up);
                let file = dir.join(format!("{family}_qa.arrow"));
                cp.forget(&format!("balance_{family}"))?;
                cp.step(&format!("gather_{family}"), &k, &[&dir], || {
                    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                    let n = crate::balance::gather(files, &file)?;
                    Ok(format!("{n} rows (not balanced)"))
                })?;
                kept.insert(family.clone(), (format!("gather_{family}"), file));
                k
            }
        };
        family_keys.push(k);
    }
    Ok((family_keys, kept))
}

/// What the family steps give the release: the steps' keys, and per family the step and the
/// file that kept its rows.
type FamilySteps = (Vec<String>, BTreeMap<String, (String, PathBuf)>);

/// Balances one family's `files` into `dir` under spec `b`; returns the step's detail.
fn balance_family(b: &FamilyBalance, files: &[PathBuf], dir: &Path) -> Result<String> {
    let bo = crate::balance::BalanceOptions {
        inputs: files.to_vec(),
        out: dir.to_path_buf(),
        spec: crate::balance::greedy::BalanceSpec {
            target: b.target,
            source_caps: b.source_caps.clone(),
            targets: Default::default(),
            mode: match b.mode.as_str() {
                "released" => crate::balance::greedy::Mode::Released,
                _ => crate::balance::greedy::Mode::Paper,
            },
        },
        type_cap: b.type_cap,
        balance_letters: b.balance_letters,
        answer_ratio: b.answer_ratio,
        prune_options: b.prune_options,
        max_rows: b.max_rows,
        max_blind_excess: b.max_blind_excess,
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let o = crate::balance::run(&bo)?;
    Ok(format!(
        "{} of {} items, {} rows; majority-answer accuracy {:.3} → {:.3}",
        o.selection.chosen.len(),
        o.items_in,
        o.rows,
        o.before.overall_majority_accuracy(),
        o.after.overall_majority_accuracy()
    ))
}

/// The release's options: the family tables `qa`, every shard's store and image folders,
/// and the config's release settings.
fn release_options(
    opts: &BuildOptions,
    outputs: &[SceneOutputs],
    qa: Vec<PathBuf>,
) -> Result<crate::release::ReleaseOptions> {
    let c = &opts.config;
    let robustness = match &c.robustness {
        None => None,
        Some(r) => {
            let bad = |detail: String| Error::Config {
                file: PathBuf::from("[robustness]"),
                detail,
            };
            let config = crate::corrupt::CorruptConfig::load(
                r.config.as_deref().or(c.corrupt.config.as_deref()),
            )?;
            let settings = crate::robustness::RobustnessOptions::settings(
                &r.corruptions()?,
                &r.severities().map_err(bad)?,
                &config,
            )?;
            Some(crate::robustness::RobustnessOptions {
                families: r.families(&c.stages).map_err(bad)?,
                settings,
                rows: r.rows,
                seed: c.seed,
                config: std::sync::Arc::new(config),
            })
        }
    };
    Ok(crate::release::ReleaseOptions {
        qa,
        stores: outputs.iter().map(|o| o.store.clone()).collect(),
        images_root: None,
        out: opts.out.clone(),
        split: c.split.clone(),
        rows_per_shard: c.release.rows_per_shard,
        row_group_rows: c.release.row_group_rows,
        row_group_bytes: c.release.row_group_mib << 20,
        images: if c.release.images == "paths" {
            crate::release::ImageMode::Paths
        } else {
            crate::release::ImageMode::Embed
        },
        name: c.name.clone(),
        image_dirs: outputs.iter().flat_map(|o| o.image_dirs.clone()).collect(),
        // DriveBench's study compares clean, corrupted and text-only answers to one question.
        text_only_controls: c.release.text_only_controls || robustness.is_some(),
        keep_images: opts.keep_images.clone(),
        robustness,
        gpu: None,
    })
}

/// The counts the release's manifest records, read back so that a release step skipped as
/// done still reports them; empty when the manifest cannot be read.
fn release_counts(opts: &BuildOptions) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut counts = BTreeMap::new();
    let manifest = opts.out.join("manifest.json");
    if let Ok(text) = crate::store::input::read_to_string(&manifest, crate::store::input::METADATA)
    {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Ok(c) = serde_json::from_value(v["counts"].clone()) {
                counts = c;
            }
        }
    }
    counts
}

/// The report's corruption contact sheet: the first front image under every corruption and
/// severity.
fn contact_sheet(
    opts: &BuildOptions,
    cp: &mut Checkpoints,
    outputs: &[SceneOutputs],
) -> Result<()> {
    let c = &opts.config;
    let stores: Vec<PathBuf> = outputs.iter().map(|o| o.store.clone()).collect();
    let Some(subject) = report::sheet_subject(&stores)? else {
        return Ok(());
    };
    let sheet = opts.out.join("report").join("contact_sheet.png");
    let k = key(
        "contact_sheet",
        &json!({"config": file_text(&c.corrupt.config)?, "seed": c.seed,
                "subject": subject.name()}),
        &[],
    );
    cp.step("contact_sheet", &k, &[&sheet], || {
        let cfg = crate::corrupt::CorruptConfig::load(c.corrupt.config.as_deref())?;
        crate::corrupt::sheet::contact_sheet_of(
            &cfg,
            &subject.image,
            &subject.name(),
            &subject.source(),
            &sheet,
            c.seed,
            crate::gpu::device::open(c.corrupt.device)?.as_deref(),
            320,
        )?;
        Ok(format!(
            "{} under 15 corruptions × 5 severities",
            subject.source()
        ))
    })
}

/// The last step: `drivegen validate` on the release as written; a violation fails the build
/// and names the rows. Keyed by the manifest, which holds every shard's sha256, so a release
/// that changed in any byte is checked again.
/// The key of a step that reads the finished release: its manifest, which holds every shard's
/// sha256, stands for all of it.
fn release_key(opts: &BuildOptions, step: &str) -> Result<String> {
    let manifest = opts.out.join("manifest.json");
    let text = crate::store::input::read(&manifest, crate::store::input::METADATA)?;
    Ok(key(
        step,
        &json!({"manifest": crate::release::shards::hex(&sha2::Sha256::digest(&text))}),
        &[],
    ))
}

/// The release viewer in `WORK/viewer`, when the config asks for it (after validation, so a
/// release that fails its checks gets none); its page's path.
fn viewer(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<Option<PathBuf>> {
    if !opts.config.report.viewer {
        return Ok(None);
    }
    let k = release_key(opts, "viewer")?;
    let dir = opts.work.join("viewer");
    let page = dir.join("index.html");
    cp.step("viewer", &k, &[&page], || {
        crate::view::run(&opts.out, &dir).map(|s| s.to_string())
    })?;
    Ok(Some(page))
}

fn validate(opts: &BuildOptions, cp: &mut Checkpoints) -> Result<()> {
    let k = release_key(opts, "validate")?;
    let json_out = opts.work.join("validate.json");
    cp.step("validate", &k, &[&json_out], || {
        let rep = crate::validate::run(&opts.out)?;
        crate::validate::write_json(&rep, &json_out)?;
        if !rep.ok() {
            return Err(Error::Refused {
                path: opts.out.clone(),
                why: format!(
                    "is not released: the release breaks {} checks (all of them in {}):\n{}",
                    rep.violations.len(),
                    json_out.display(),
                    rep.summary(20)
                ),
            });
        }
        let rows: usize = rep.rows.values().sum();
        Ok(format!(
            "{rows} rows in {} splits, {} distinct images decoded: every check passed",
            rep.rows.len(),
            rep.distinct_images
        ))
    })
}

/// Records the build config, its hash and the seed in `manifest.json`.
fn add_build_to_manifest(opts: &BuildOptions) -> Result<()> {
    let path = opts.out.join("manifest.json");
    let text = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
    let mut v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::json(&path, e))?;
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "build".into(),
            json!({
                "config": opts.config_text,
                "config_hash": BuildConfig::hash_of(&opts.config_text),
                "seed": opts.config.seed,
            }),
        );
    }
    let out = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    write_atomic(&path, out.as_bytes())
}

/// What the report shows from the per-scene outputs.
fn outputs_for_report(outputs: &[SceneOutputs]) -> report::Inputs {
    report::Inputs {
        som: outputs
            .iter()
            .filter_map(|o| o.som_dir.clone().map(|d| (d, o.store.clone())))
            .collect(),
        corrupt_dirs: outputs.iter().flat_map(|o| o.image_dirs.clone()).collect(),
        stores: outputs.iter().map(|o| o.store.clone()).collect(),
    }
}
