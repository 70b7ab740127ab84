//! EgoDyn-Bench: ego-motion clips, their kinematics, and the deterministic oracle's 14
//! questions (`docs/egodyn.md`).
//!
//! ```text
//! store ──scenes──▶ clips (3 s, 10 Hz) ──▶ kinematics (gradient + Savitzky–Golay) ──▶ validation
//!                                                         │
//!                      DIR/clips.arrow ◀──────────────────┤
//!                      DIR/egodyn_qa.arrow ◀── oracle ◀───┘      DIR/egodyn_rejects.jsonl
//! ```
//!
//! The store is streamed one scene at a time and every output table gets one batch per scene,
//! so memory does not grow with the number of scenes. Output is deterministic: the same store
//! and config give byte-identical files.

pub mod calibrate;
pub mod clips;
pub mod config;
pub mod kinematics;
pub mod oracle;
pub mod output;
pub(crate) mod prompt;
pub mod savgol;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use self::clips::RawClip;
use self::config::EgodynConfig;
use self::kinematics::{Features, Kinematics, Processor};
use self::oracle::Oracle;
use self::prompt::TrajectoryText;
use crate::config::StageConfig;
use crate::store::rejects::{Reject, RejectLog};
use crate::store::{SceneData, Store};
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "ego-motion output";

/// The stage name in reject logs.
pub(crate) const STAGE: &str = "egomotion";
/// File names inside the output folder.
pub const CLIPS_FILE: &str = "clips.arrow";
pub const QA_FILE: &str = "egodyn_qa.arrow";
pub const REJECTS_FILE: &str = "egodyn_rejects.jsonl";

/// A clip with its kinematics, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipResult {
    pub raw: RawClip,
    pub kin: Kinematics,
    pub features: Features,
}

/// Everything needed to turn scenes into clips and answers, built once per run.
#[derive(Debug, Clone)]
pub struct Engine {
    pub cfg: EgodynConfig,
    pub processor: Processor,
    pub oracle: Oracle,
    pub config_hash: String,
}

impl Engine {
    pub fn new(cfg: EgodynConfig) -> Result<Self> {
        let processor = Processor::new(&cfg.kinematics)?;
        let oracle = Oracle::new(&cfg).map_err(|detail| Error::Config {
            file: PathBuf::from("egodyn config"),
            detail,
        })?;
        let config_hash = cfg.hash()?;
        Ok(Self {
            cfg,
            processor,
            oracle,
            config_hash,
        })
    }

    /// Resamples, differentiates and validates one raw clip; `Err` is the reason it fails.
    pub fn process(&self, raw: &RawClip) -> Result<(Kinematics, Features), String> {
        let tr = clips::resample(raw, &self.cfg)?;
        let kin = self.processor.compute(&tr);
        clips::validate(&kin, raw.duration_s, &self.cfg)?;
        let features = self.processor.features(&kin);
        Ok((kin, features))
    }

    /// The valid clips of a scene, in time order, and the rejects (with reasons and kinds).
    pub fn scene_clips(
        &self,
        scene: &SceneData,
        source: &str,
    ) -> (Vec<ClipResult>, Vec<(Reject, &'static str)>) {
        let (raws, refused) = clips::extract(scene, source, &self.cfg.clips);
        let scene_id = scene.scene.scene_id.clone();
        let reject = |item: String, reason: String| Reject {
            stage: STAGE.into(),
            scene_id: Some(scene_id.clone()),
            item: Some(item),
            file: None,
            record: None,
            reason,
        };
        let mut rejects: Vec<(Reject, &'static str)> = refused
            .into_iter()
            .map(|r| (reject(r.clip_id, r.reason), r.kind))
            .collect();
        let results: Vec<_> = raws
            .into_par_iter()
            .map(|raw| {
                let r = self.process(&raw);
                (raw, r)
            })
            .collect();
        let mut ok = Vec::with_capacity(results.len());
        for (raw, r) in results {
            match r {
                Ok((kin, features)) => ok.push(ClipResult { raw, kin, features }),
                Err(reason) => rejects.push((reject(raw.clip_id, reason), "invalid")),
            }
        }
        (ok, rejects)
    }
}

/// What `egomotion::run` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EgomotionSummary {
    pub out_dir: PathBuf,
    pub config_hash: String,
    pub alpha: f64,
    pub scenes: u64,
    pub clips: u64,
    pub qa_records: u64,
    /// Rejected candidates by kind (`too_few_poses`, `short_span`, `no_anchor_image`, `invalid`).
    pub rejected: BTreeMap<String, u64>,
    /// question → label → count, questions in config order.
    pub labels: Vec<(String, Vec<(String, u64)>)>,
}

impl fmt::Display for EgomotionSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rejected: u64 = self.rejected.values().sum();
        writeln!(
            f,
            "egodyn: {} scenes → {} clips, {} QA records in {} (config {}, α = {})",
            self.scenes,
            self.clips,
            self.qa_records,
            self.out_dir.display(),
            self.config_hash,
            self.alpha
        )?;
        write!(f, "  rejected candidates: {rejected}")?;
        if rejected > 0 {
            let parts: Vec<String> = self
                .rejected
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        writeln!(f)?;
        for (q, counts) in &self.labels {
            let parts: Vec<String> = counts.iter().map(|(l, n)| format!("{l} {n}")).collect();
            writeln!(f, "  {q:<20} {}", parts.join(", "))?;
        }
        Ok(())
    }
}

/// What an ego-motion run reads and writes, and with which settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// The canonical store to read.
    pub store: PathBuf,
    /// The folder that gets [`CLIPS_FILE`], [`QA_FILE`] and [`REJECTS_FILE`].
    pub out: PathBuf,
    /// Thresholds, filters and question texts.
    pub config: EgodynConfig,
    /// The scenes this run takes (all of them by default; see [`crate::shard`]).
    pub shard: crate::shard::Shard,
}

impl Options {
    /// All scenes of `store` into `out`, with the config at `config` (the built-in
    /// `configs/egodyn.toml` when `None`).
    pub fn new(
        store: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
        config: Option<&Path>,
    ) -> Result<Self> {
        Ok(Self {
            store: store.into(),
            out: out.into(),
            config: EgodynConfig::load(config)?,
            shard: crate::shard::Shard::ALL,
        })
    }
}

/// Cuts the clips of the store's scenes (those of `opts.shard`), answers the 14 questions and
/// writes the clips, the EgoDyn questions and the rejects into `opts.out`.
pub fn run(opts: &Options) -> Result<EgomotionSummary> {
    let (store_dir, out_dir, shard) = (opts.store.as_path(), opts.out.as_path(), opts.shard);
    crate::store::paths::disjoint(store_dir, "the store", out_dir, "the output")?;
    let store = Store::open(store_dir)?;
    let engine = Engine::new(opts.config.clone())?;
    let cfg = &engine.cfg;
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(out_dir, OUTPUT)?;
    let _owned = crate::store::owner::Owned::claim(out_dir, OUTPUT, "clips and EgoDyn questions")?;
    let clips_schema = output::clips_schema();
    let qa_schema = crate::qa::qa_schema();
    let mut clips_w = crate::store::atomic::ipc_writer(&out_dir.join(CLIPS_FILE), &clips_schema)?;
    let mut qa_w = crate::store::atomic::ipc_writer(&out_dir.join(QA_FILE), &qa_schema)?;
    let mut tally = crate::qa::ipc::Tally::default();
    let mut log = RejectLog::new();
    let mut summary = EgomotionSummary {
        out_dir: out_dir.to_path_buf(),
        config_hash: engine.config_hash.clone(),
        alpha: cfg.alpha,
        ..Default::default()
    };
    let mut counts: Vec<Vec<u64>> = engine
        .oracle
        .questions
        .iter()
        .map(|q| vec![0; q.choices.len()])
        .collect();
    let pb = crate::progress::bar(
        store
            .meta()
            .counts
            .scenes
            .div_ceil(u64::from(shard.count.max(1))),
        "egodyn clips",
    );
    for scene in store.scenes_in(shard)? {
        let scene = scene?;
        let source = if scene.scene.source.is_empty() {
            store.meta().source.clone()
        } else {
            scene.scene.source.clone()
        };
        let (clips, rejects) = engine.scene_clips(&scene, &source);
        for (r, kind) in rejects {
            *summary.rejected.entry(kind.to_string()).or_default() += 1;
            log.push(r);
        }
        let per_clip: Vec<Result<(TrajectoryText, Vec<crate::qa::QaRecord>)>> = clips
            .par_iter()
            .map(|c| {
                let text = TrajectoryText::new(
                    &c.kin,
                    &c.features,
                    cfg.prompt.trajectory_points,
                    cfg.prompt.coordinates_frame,
                );
                let qa = output::qa_records(c, &engine.oracle, cfg, &engine.config_hash)?;
                Ok((text, qa))
            })
            .collect();
        let mut texts = Vec::with_capacity(clips.len());
        let mut records = Vec::with_capacity(clips.len() * engine.oracle.questions.len());
        for r in per_clip {
            let (t, qa) = r?;
            texts.push(t);
            records.extend(qa);
        }
        for (qi, q) in engine.oracle.questions.iter().enumerate() {
            for r in records.iter().filter(|r| r.question_type == q.id) {
                if let Some(k) = q.choices.iter().position(|c| *c == r.answer) {
                    counts[qi][k] += 1;
                }
            }
        }
        if !clips.is_empty() {
            clips_w.write(&output::clips_batch(&clips, &texts)?)?;
            qa_w.write(&crate::qa::to_batch(&records)?)?;
            tally.add(&records);
        }
        summary.scenes += 1;
        summary.clips += clips.len() as u64;
        summary.qa_records += records.len() as u64;
        pb.inc(1);
    }
    pb.finish_and_clear();
    clips_w.finish()?;
    clips_w.into_inner()?.commit()?;
    qa_w.finish()?;
    qa_w.into_inner()?.commit()?;
    tally.log(&out_dir.join(QA_FILE));
    log.write(&out_dir.join(REJECTS_FILE))?;
    summary.labels = engine
        .oracle
        .questions
        .iter()
        .zip(counts)
        .map(|(q, c)| (q.id.clone(), q.choices.iter().cloned().zip(c).collect()))
        .collect();
    Ok(summary)
}
