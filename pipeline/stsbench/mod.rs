//! STSBench (`docs/stsbench.md`): spatio-temporal scenarios mined from tracks and the map, and
//! multiple-choice questions with verified distractors, as family `stsbench`.
//!
//! `drivegen stsbench --store STORE --out DIR` writes `DIR/stsbench_qa.arrow`: the common QA
//! record plus the scenario's category, role, type, actor and other ids, window keyframes and
//! verified negatives ([`output::schema`]).

pub mod catalog;
pub mod config;
pub mod mine;
pub mod output;
pub(crate) mod qa;
pub mod rules;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

pub use catalog::{Role, Scenario};
pub use config::StsConfig;

use crate::config::StageConfig;
use crate::maplayers::MapLayers;
use crate::store::{CameraRow, Store};
use crate::tracks::{scene_tracks, Track};
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "STSBench output";

/// The file the stage writes.
pub const QA_FILE: &str = "stsbench_qa.arrow";

/// Camera order for choosing the view that shows an agent (the public code's).
pub(crate) const CAMERA_ORDER: [&str; 6] = [
    "CAM_FRONT",
    "CAM_FRONT_RIGHT",
    "CAM_BACK_RIGHT",
    "CAM_BACK",
    "CAM_BACK_LEFT",
    "CAM_FRONT_LEFT",
];

/// What `run` needs.
#[derive(Debug, Clone)]
pub struct Options {
    pub store: PathBuf,
    pub out: PathBuf,
    pub config: StsConfig,
    pub seed: u64,
    /// The folder of map-expansion files (`<location>.json`); default
    /// `<source_root>/maps/expansion` of the store.
    pub maps: Option<PathBuf>,
}

/// What `run` did.
#[derive(Debug, Clone, Default)]
pub struct StsSummary {
    pub out_file: PathBuf,
    pub config_hash: String,
    pub scenes: usize,
    pub scenes_without_map: usize,
    pub tracks: usize,
    pub windows: u64,
    /// Per `role/SCENARIO`.
    pub mined: BTreeMap<String, u64>,
    pub kept: BTreeMap<String, u64>,
    pub questions: BTreeMap<String, u64>,
    /// Kept instances not asked: their objects leave fewer than `mcq.min_negatives` plausible
    /// distractors, or fewer of them are verified than the question offers.
    pub not_asked: u64,
    /// Per `role/SCENARIO`: windows not evaluated for lack of a map layer.
    pub skipped_no_map: BTreeMap<String, u64>,
}

impl fmt::Display for StsSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
        // The first line is the build's step detail: it says what the stage made.
        writeln!(
            f,
            "stsbench: {} questions in {}",
            total(&self.questions),
            self.out_file.display()
        )?;
        writeln!(
            f,
            "  {} scenes ({} without a map), {} tracks, {} windows; config {}",
            self.scenes, self.scenes_without_map, self.tracks, self.windows, self.config_hash
        )?;
        writeln!(
            f,
            "  {} scenarios mined, {} kept after sub-sampling, {} questions ({} not asked: too few plausible or verified distractors)",
            total(&self.mined),
            total(&self.kept),
            total(&self.questions),
            self.not_asked
        )?;
        for (k, v) in &self.mined {
            writeln!(
                f,
                "    {k:<40} mined {v:>5}  kept {:>5}  questions {:>5}",
                self.kept.get(k).unwrap_or(&0),
                self.questions.get(k).unwrap_or(&0)
            )?;
        }
        if !self.skipped_no_map.is_empty() {
            writeln!(f, "  skipped for lack of a map layer (windows):")?;
            for (k, v) in &self.skipped_no_map {
                writeln!(f, "    {k:<40} {v:>7}")?;
            }
        }
        Ok(())
    }
}

/// What question writing needs of a mined scene.
struct MinedScene {
    scene_id: String,
    source: String,
    tracks: Vec<Track>,
    /// Keyframe camera images by (frame, camera).
    cameras: HashMap<(u32, String), CameraRow>,
    frame_seconds: HashMap<u32, f64>,
}

/// The maps folder of a store: `--maps`, else `<source_root>/maps/expansion`.
pub(crate) fn maps_dir(store: &Store, maps: Option<&Path>) -> PathBuf {
    match maps {
        Some(m) => m.to_path_buf(),
        None => PathBuf::from(&store.meta().source_root)
            .join("maps")
            .join("expansion"),
    }
}

/// Builds a scene's tracks with the map of its location.
pub fn tracks_with_map(
    cfg: &StsConfig,
    scene: &crate::store::SceneData,
    map: &MapLayers,
) -> Vec<Track> {
    let lateral = cfg.lane_change.max_boundary_angle_deg.to_radians();
    scene_tracks(scene, &|c| cfg.kind_of(c))
        .into_iter()
        .map(|t| t.with_map(map, lateral))
        .collect()
}

fn key(role: Role, sc: Scenario) -> String {
    format!("{}/{}", role.name(), sc.name())
}

/// Whether the point projects into the image (in front of the camera, inside the frame).
fn shows(cam: &CameraRow, p: [f64; 3]) -> bool {
    let pt = nalgebra::Point3::new(p[0], p[1], p[2]);
    let in_ego = cam.ego.isometry().inverse_transform_point(&pt);
    let c = cam.cam.isometry().inverse_transform_point(&in_ego);
    if c.z <= 0.1 {
        return false;
    }
    let u = cam.fx * c.x / c.z + cam.cx;
    let v = cam.fy * c.y / c.z + cam.cy;
    u >= 0.0 && v >= 0.0 && u < f64::from(cam.width) && v < f64::from(cam.height)
}

/// The first camera (in [`CAMERA_ORDER`]) whose image at `frame` shows `tr`'s centre.
fn camera_showing<'a>(ms: &'a MinedScene, tr: &Track, frame: u32) -> Option<&'a CameraRow> {
    let i = tr.index_of(frame)?;
    let p = [tr.xy[i][0], tr.xy[i][1], tr.z[i]];
    CAMERA_ORDER
        .iter()
        .filter_map(|c| ms.cameras.get(&(frame, c.to_string())))
        .find(|cam| shows(cam, p))
}

fn shown(ms: &MinedScene, inst: &mine::Instance) -> qa::Shown {
    let actor = &ms.tracks[inst.actor];
    let mut s = qa::Shown::default();
    for &f in &inst.frames {
        let cam = if actor.is_ego {
            ms.cameras.get(&(f, "CAM_FRONT".to_string()))
        } else {
            camera_showing(ms, actor, f)
        }
        .or_else(|| {
            CAMERA_ORDER
                .iter()
                .find_map(|c| ms.cameras.get(&(f, c.to_string())))
        });
        if let Some(c) = cam {
            s.cameras.push(c.camera.clone());
            s.camera_frame_ids.push(c.camera_frame_id.clone());
        }
    }
    let f0 = inst.frames[0];
    for t in [Some(inst.actor), inst.other].into_iter().flatten() {
        let tr = &ms.tracks[t];
        if !tr.is_ego {
            s.first_cameras
                .push(camera_showing(ms, tr, f0).map(|c| c.camera.clone()));
        }
    }
    s
}

/// Mines every scene of the store, sub-samples, and writes `stsbench_qa.arrow`.
pub fn run(opts: &Options) -> Result<StsSummary> {
    let cfg = &opts.config;
    crate::store::paths::disjoint(&opts.store, "the store", &opts.out, "the output")?;
    let store = Store::open(&opts.store)?;
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(&opts.out, OUTPUT)?;
    let _owned = crate::store::owner::Owned::claim(&opts.out, OUTPUT, "stsbench_qa.arrow")?;
    let maps = maps_dir(&store, opts.maps.as_deref());
    let mut map_cache: BTreeMap<String, MapLayers> = BTreeMap::new();
    let config_hash = cfg.hash()?;
    let mut summary = StsSummary {
        out_file: opts.out.join(QA_FILE),
        config_hash: config_hash.clone(),
        ..Default::default()
    };
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    let schema = output::schema();
    let mut w = crate::store::atomic::ipc_writer(&summary.out_file, &schema)?;
    let mut tally = crate::qa::ipc::Tally::default();
    let pb = crate::progress::bar(store.meta().counts.scenes, "stsbench");
    for scene in store.scenes()? {
        let scene = scene?;
        let location = scene.scene.location.clone().unwrap_or_default();
        if !map_cache.contains_key(&location) {
            let m = if location.is_empty() {
                MapLayers::none()
            } else {
                crate::maplayers::load_location(&maps, &location)?
            };
            map_cache.insert(location.clone(), m);
        }
        let map = &map_cache[&location];
        if map.file.is_none() {
            summary.scenes_without_map += 1;
        }
        let tracks = tracks_with_map(cfg, &scene, map);
        let mined = mine::mine_scene(cfg, &tracks);
        summary.scenes += 1;
        summary.tracks += tracks.len();
        summary.windows += mined.windows;
        for (k, v) in mined.skipped_no_map {
            *summary.skipped_no_map.entry(k).or_default() += v;
        }
        for i in &mined.instances {
            *summary.mined.entry(key(i.role, i.scenario)).or_default() += 1;
        }
        let t0 = scene
            .frames
            .iter()
            .map(|f| f.timestamp_us)
            .min()
            .unwrap_or(0);
        let ms = MinedScene {
            scene_id: scene.scene.scene_id.clone(),
            source: if scene.scene.source.is_empty() {
                store.meta().source.clone()
            } else {
                scene.scene.source.clone()
            },
            tracks,
            cameras: scene
                .cameras
                .into_iter()
                .filter(|c| c.is_keyframe)
                .map(|c| ((c.frame_idx, c.camera.clone()), c))
                .collect(),
            frame_seconds: scene
                .frames
                .iter()
                .map(|f| (f.frame_idx, (f.timestamp_us - t0) as f64 * 1e-6))
                .collect(),
        };
        let mut rows = Vec::new();
        for k in qa::subsample(cfg, &mined.instances) {
            let inst = &mined.instances[k];
            *summary
                .kept
                .entry(key(inst.role, inst.scenario))
                .or_default() += 1;
            let secs = |f: u32| ms.frame_seconds.get(&f).copied().unwrap_or(0.0);
            let window_seconds = secs(inst.frames[inst.frames.len() - 1]) - secs(inst.frames[0]);
            let input = qa::QuestionInput {
                source: &ms.source,
                scene_id: &ms.scene_id,
                tracks: &ms.tracks,
                shown: shown(&ms, inst),
                seed: opts.seed,
                config_hash: &config_hash,
                window_seconds,
            };
            match qa::question(cfg, inst, input)? {
                Some(r) => {
                    *summary
                        .questions
                        .entry(key(inst.role, inst.scenario))
                        .or_default() += 1;
                    rows.push((r, inst));
                }
                None => summary.not_asked += 1,
            }
        }
        w.write(&output::to_batch(&rows, &ms.tracks)?)?;
        tally.add(rows.iter().map(|(r, _)| r));
        pb.inc(1);
    }
    pb.finish_and_clear();
    w.finish()?;
    w.into_inner()?.commit()?;
    tally.log(&summary.out_file);
    Ok(summary)
}
