//! Writes the synthetic world as a nuScenes v1.0 dataroot: the 13 JSON tables, camera JPEGs
//! (keyframes under `samples/`, the ~12 Hz rest under `sweeps/`), LIDAR_TOP point clouds at
//! 20 Hz (object returns on keyframes, ground only on sweeps) and one map mask per location.
//!
//! Timing follows nuScenes: a sample is the LIDAR_TOP keyframe; every camera runs at its own
//! phase a few tens of milliseconds before the lidar, and its keyframe image is the frame
//! nearest the sample; a sweep belongs to the sample that follows it. Every sample_data has its
//! own ego_pose at its own timestamp.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nalgebra::{Isometry3, Point3, Vector3};
use rayon::prelude::*;
use serde::Serialize;

use super::render::{self, Canvas, Ground, ObjectPixels, Solid, View};
use super::rig::{self, CameraSpec, CAMERAS};
use super::tokens::{token, Rng};
use super::world::{Agent, SceneWorld, KINDS, PLACES};
use super::{SynthOptions, SynthSummary};
use crate::formats::nuscenes::*;
use crate::geometry::{pose, quat_from_yaw};
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// The first keyframe of the corpus: 2018-07-24 03:28:47.647951 UTC, when nuScenes-mini was
/// being recorded.
pub(crate) const T0_US: i64 = 1_532_402_927_647_951;
/// Scenes start at least this far apart (µs), and 30 s more than a scene lasts.
pub(crate) const SCENE_SPACING_US: i64 = 90_000_000;
/// Objects farther than this from the ego are not annotated (m).
pub(crate) const ANNOTATION_RANGE: f64 = 60.0;
/// The lidar returns no points from farther than this (m).
const LIDAR_RANGE: f64 = 55.0;
/// Points per m² of exposed surface at 1 m; a car side at 10 m gets ~160.
const LIDAR_DENSITY: f64 = 2000.0;
/// Boxes farther than this are not drawn (m).
const DRAW_RANGE: f64 = 250.0;
/// Image size of the depth-only pass that measures visibility.
const VIS_WIDTH: u32 = 800;
const VIS_HEIGHT: u32 = 450;

/// The eight nuScenes attributes, described in our own words.
const ATTRIBUTES: [(&str, &str); 8] = [
    ("vehicle.moving", "a vehicle in motion"),
    (
        "vehicle.stopped",
        "a vehicle standing still for now, e.g. waiting at a junction",
    ),
    ("vehicle.parked", "a vehicle parked at the kerb"),
    ("cycle.with_rider", "a bicycle or motorcycle being ridden"),
    (
        "cycle.without_rider",
        "a bicycle or motorcycle without anyone on it",
    ),
    ("pedestrian.sitting_lying_down", "a person sitting or lying"),
    ("pedestrian.standing", "a person standing still"),
    ("pedestrian.moving", "a person walking"),
];

/// Visibility bins: the share of the box the six keyframe images show.
const VISIBILITY: [(&str, &str, &str); 4] = [
    (
        "1",
        "v0-40",
        "0 to 40 % of the object is visible in the camera images",
    ),
    (
        "2",
        "v40-60",
        "40 to 60 % of the object is visible in the camera images",
    ),
    (
        "3",
        "v60-80",
        "60 to 80 % of the object is visible in the camera images",
    ),
    (
        "4",
        "v80-100",
        "80 to 100 % of the object is visible in the camera images",
    ),
];

/// A sensor channel of the rig: the six cameras, then the lidar.
const LIDAR: usize = 6;
/// LIDAR_TOP sweep rate (Hz), nuScenes' 20 Hz.
const LIDAR_HZ: f64 = 20.0;

fn channel_name(ch: usize) -> &'static str {
    if ch == LIDAR {
        rig::LIDAR_TOP_CHANNEL
    } else {
        CAMERAS[ch].channel
    }
}

/// One sensor reading of a scene.
#[derive(Debug, Clone)]
struct Reading {
    /// Position in its channel's stream (for tokens).
    n: usize,
    ts: i64,
    /// The sample it belongs to (the next one in time, or its own for keyframes).
    sample: usize,
    key: bool,
    filename: String,
}

/// Everything about one scene except the images.
struct ScenePlan {
    start_us: i64,
    logfile: String,
    date: String,
    sample_ts: Vec<i64>,
    /// Per channel, in time order.
    readings: Vec<Vec<Reading>>,
}

thread_local! {
    /// Each worker thread's render buffers, reused from frame to frame.
    static CANVAS: RefCell<Canvas> = RefCell::new(Canvas::new());
}

/// One image to render.
struct Job {
    scene: usize,
    ch: usize,
    idx: usize,
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// The Gregorian date (y, m, d) of a day count since 1970-01-01. Counting whole years and
/// months is plenty fast for the few dates a corpus needs.
fn civil_from_days(mut days: i64) -> (i64, u32, u32) {
    let mut y = 1970;
    loop {
        let len = if is_leap(y) { 366 } else { 365 };
        if days < 0 {
            y -= 1;
            days += if is_leap(y) { 366 } else { 365 };
        } else if days >= len {
            days -= len;
            y += 1;
        } else {
            break;
        }
    }
    let months = [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut m = 0;
    while days >= months[m] {
        days -= months[m];
        m += 1;
    }
    (y, m as u32 + 1, days as u32 + 1)
}

/// Local date and time strings ("2018-07-24", "11-22-45") of a µs timestamp.
fn local_time(ts_us: i64, utc_offset_h: i64) -> (String, String) {
    let secs = ts_us.div_euclid(1_000_000) + utc_offset_h * 3600;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}-{:02}-{:02}", sod / 3600, (sod / 60) % 60, sod % 60),
    )
}

/// The first keyframe's timestamp of scene `index` (shared with the other formats' writers,
/// so that every format puts the same world at the same times).
pub(crate) fn scene_start_us(index: usize, duration_s: f64) -> i64 {
    let spacing = SCENE_SPACING_US.max(((duration_s + 30.0) * 1e6) as i64);
    T0_US + index as i64 * spacing
}

fn plan_scene(world: &SceneWorld, opts: &SynthOptions) -> ScenePlan {
    let start_us = scene_start_us(world.index, opts.duration_s);
    let place = world.place;
    let (date, clock) = local_time(start_us - 10_000_000, place.utc_offset_h);
    let tz = if place.utc_offset_h >= 0 {
        format!("+{:02}00", place.utc_offset_h)
    } else {
        format!("-{:02}00", -place.utc_offset_h)
    };
    let logfile = format!("{}-{date}-{clock}{tz}", place.vehicle);
    let n_samples = ((opts.duration_s * opts.keyframe_hz).floor() as usize).max(1);
    let sample_ts: Vec<i64> = (0..n_samples)
        .map(|i| start_us + (i as f64 * 1e6 / opts.keyframe_hz).round() as i64)
        .collect();
    let last = *sample_ts.last().unwrap_or(&start_us);
    let mut rng = Rng::new(opts.seed, &format!("scene/{}/timing", world.index));
    let mut readings = Vec::with_capacity(7);
    for cam in &CAMERAS {
        let sweeps = opts.write_sweeps
            && opts
                .sweep_cameras
                .as_ref()
                .is_none_or(|c| c.iter().any(|c| c == cam.channel));
        let period = 1e6 / opts.camera_hz;
        // Frames from the first sample's keyframe to just past the last sample.
        let first = start_us + cam.offset_us;
        let mut times = Vec::new();
        let mut n = 0usize;
        loop {
            let nominal = first as f64 + n as f64 * period;
            if nominal > last as f64 + 0.5 * period {
                break;
            }
            let jitter = (rng.range(-800.0, 800.0)).round() as i64;
            times.push(nominal.round() as i64 + jitter);
            n += 1;
        }
        // The keyframe of each sample: the frame nearest in time.
        let mut key_of = vec![usize::MAX; times.len()];
        for (si, &st) in sample_ts.iter().enumerate() {
            if let Some((fi, _)) = times
                .iter()
                .enumerate()
                .min_by_key(|(_, &t)| (t - st).abs())
            {
                key_of[fi] = si;
            }
        }
        let mut list = Vec::new();
        for (fi, &ts) in times.iter().enumerate() {
            let key = key_of[fi] != usize::MAX;
            let sample = if key {
                key_of[fi]
            } else {
                match sample_ts.iter().position(|&st| st >= ts) {
                    Some(s) => s,
                    None => continue,
                }
            };
            if !key && !sweeps {
                continue;
            }
            let dir = if key { "samples" } else { "sweeps" };
            let filename = format!("{dir}/{ch}/{logfile}__{ch}__{ts}.jpg", ch = cam.channel);
            list.push(Reading {
                n: list.len(),
                ts,
                sample,
                key,
                filename,
            });
        }
        readings.push(list);
    }
    // LIDAR_TOP spins at 20 Hz: every sample is one of its sweeps, the rest go to `sweeps/`.
    // They stay with `--no-sweeps` (small files), because their ego poses are the log's
    // high-rate pose stream that ego-motion work needs, as in real nuScenes.
    let mut lidar: Vec<Reading> = Vec::new();
    let lidar_period = (1e6 / LIDAR_HZ).round() as i64;
    for (si, &ts) in sample_ts.iter().enumerate() {
        // The last sample has no sweeps after it: nothing would own them.
        let next = sample_ts.get(si + 1).copied().unwrap_or(ts + 1);
        let mut t = ts;
        while t < next {
            let key = t == ts;
            let dir = if key { "samples" } else { "sweeps" };
            lidar.push(Reading {
                n: lidar.len(),
                ts: t,
                // nuScenes files a sweep under the sample that follows it.
                sample: if key { si } else { si + 1 },
                key,
                filename: format!("{dir}/LIDAR_TOP/{logfile}__LIDAR_TOP__{t}.pcd.bin"),
            });
            t += lidar_period;
        }
    }
    readings.push(lidar);
    ScenePlan {
        start_us,
        logfile,
        date,
        sample_ts,
        readings,
    }
}

/// Scene time (s) of a timestamp.
fn scene_time(plan: &ScenePlan, ts: i64) -> f64 {
    (ts - plan.start_us) as f64 * 1e-6
}

/// The ego pose (ego → global) at scene time `t`.
fn ego_iso(world: &SceneWorld, t: f64) -> Isometry3<f64> {
    let e = world.ego_state(t);
    pose([e.x, e.y, 0.0], quat_from_yaw(e.yaw))
}

fn camera_view(world: &SceneWorld, cam: &CameraSpec, t: f64, width: u32, height: u32) -> View {
    let cam_to_global = ego_iso(world, t) * pose(cam.translation, cam.rotation);
    let k = cam.intrinsic(width, height);
    View {
        width,
        height,
        fx: k[0][0],
        fy: k[1][1],
        cx: k[0][2],
        cy: k[1][2],
        rot: *cam_to_global.rotation.to_rotation_matrix().matrix(),
        pos: cam_to_global.translation.vector,
    }
}

/// The boxes to draw at scene time `t`, near enough to matter.
pub(crate) fn solids_at(world: &SceneWorld, t: f64) -> Vec<Solid> {
    let e = world.ego_state(t);
    world
        .agents
        .iter()
        .filter_map(|a| {
            let st = a.state(t);
            let d = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
            (d < DRAW_RANGE).then_some(Solid {
                id: a.id,
                class: a.class_index(),
                center: st.center,
                yaw: st.yaw,
                size: a.size,
            })
        })
        .collect()
}

fn attribute_names(agent: &Agent, speed: f64) -> Vec<&'static str> {
    let cat = agent.kind.category;
    if cat == "vehicle.bicycle" || cat == "vehicle.motorcycle" {
        vec![if agent.parked {
            "cycle.without_rider"
        } else {
            "cycle.with_rider"
        }]
    } else if cat.starts_with("vehicle.") {
        vec![if speed > 0.3 {
            "vehicle.moving"
        } else if agent.parked {
            "vehicle.parked"
        } else {
            "vehicle.stopped"
        }]
    } else if cat.starts_with("human.pedestrian.") {
        vec![if speed > 0.2 {
            "pedestrian.moving"
        } else {
            "pedestrian.standing"
        }]
    } else {
        Vec::new()
    }
}

fn visibility_token(frac: f64) -> &'static str {
    if frac < 0.4 {
        "1"
    } else if frac < 0.6 {
        "2"
    } else if frac < 0.8 {
        "3"
    } else {
        "4"
    }
}

/// A face of a box seen from a point: centre, the two half-axes spanning it, and its area
/// foreshortened by the viewing angle (m²).
type FacingFace = (Vector3<f64>, Vector3<f64>, Vector3<f64>, f64);

/// A box's faces that face `from` (global), as (centre, two half-axes) in the global frame,
/// with the visible area of each (m²·cos).
fn facing_faces(center: [f64; 3], yaw: f64, size: [f64; 3], from: Vector3<f64>) -> Vec<FacingFace> {
    let (c, s) = (yaw.cos(), yaw.sin());
    let fwd = Vector3::new(c, s, 0.0);
    let left = Vector3::new(-s, c, 0.0);
    let up = Vector3::z();
    let (hw, hl, hh) = (0.5 * size[0], 0.5 * size[1], 0.5 * size[2]);
    let ctr = Vector3::from(center);
    let mut out = Vec::new();
    for (n, half_n, a, ha, b, hb) in [
        (fwd, hl, left, hw, up, hh),
        (-fwd, hl, left, hw, up, hh),
        (left, hw, fwd, hl, up, hh),
        (-left, hw, fwd, hl, up, hh),
        (up, hh, fwd, hl, left, hw),
    ] {
        let fc = ctr + n * half_n;
        let to = from - fc;
        let cos = n.dot(&to) / to.norm().max(1e-9);
        if cos > 0.05 {
            out.push((fc, a * ha, b * hb, 4.0 * ha * hb * cos));
        }
    }
    out
}

/// The tables that do not depend on the scenes: categories, attributes, visibility bins and
/// sensors.
fn fixed_tables(seed: u64) -> Tables {
    let tok = |name: &str| token(seed, name);
    let mut t = Tables::default();
    for k in &KINDS {
        t.category.push(Category {
            token: tok(&format!("category/{}", k.category)),
            name: k.category.to_string(),
            description: format!("synthetic {} ({})", k.category, k.class),
            index: None,
        });
    }
    for (name, desc) in ATTRIBUTES {
        t.attribute.push(Attribute {
            token: tok(&format!("attribute/{name}")),
            name: name.into(),
            description: desc.into(),
        });
    }
    for (tk, level, desc) in VISIBILITY {
        t.visibility.push(Visibility {
            token: tk.into(),
            level: level.into(),
            description: desc.into(),
        });
    }
    for ch in 0..7 {
        let name = channel_name(ch);
        t.sensor.push(Sensor {
            token: tok(&format!("sensor/{name}")),
            channel: name.into(),
            modality: if ch == LIDAR { "lidar" } else { "camera" }.into(),
        });
    }
    t
}

/// A few scenes built, drawn and written together (see [`write`]), index for index.
struct Chunk {
    worlds: Vec<SceneWorld>,
    plans: Vec<ScenePlan>,
    grounds: Vec<Ground>,
}

/// Per scene of a chunk, per sample, per camera: what the keyframe image shows of each box.
type KeyframeCoverage = Vec<Vec<Vec<Vec<ObjectPixels>>>>;

impl Chunk {
    /// Builds scenes `scenes` in parallel.
    fn build(opts: &SynthOptions, scenes: std::ops::Range<usize>) -> Result<Self> {
        let worlds: Vec<SceneWorld> = scenes
            .into_par_iter()
            .map(|k| SceneWorld::build(opts.seed, k, opts.duration_s))
            .collect::<Result<_>>()?;
        let plans: Vec<ScenePlan> = worlds.iter().map(|w| plan_scene(w, opts)).collect();
        let grounds: Vec<Ground> = worlds
            .iter()
            .map(|w| Ground::new(&w.roads, &w.junctions))
            .collect();
        Ok(Self {
            worlds,
            plans,
            grounds,
        })
    }

    /// Every camera reading of the chunk, scene by scene and camera by camera.
    fn jobs(&self) -> Vec<Job> {
        self.plans
            .iter()
            .enumerate()
            .flat_map(|(scene, p)| {
                (0..6).flat_map(move |ch| {
                    (0..p.readings[ch].len()).map(move |idx| Job { scene, ch, idx })
                })
            })
            .collect()
    }

    /// Renders and writes the images of `jobs`, in parallel, each one independent of the
    /// others; adds the time spent to `render_ns`.
    fn render_images(
        &self,
        out: &Path,
        opts: &SynthOptions,
        jobs: &[Job],
        render_ns: &AtomicU64,
    ) -> Result<()> {
        let (w, h) = (opts.image_width, opts.image_height);
        jobs.par_iter().try_for_each(|job| -> Result<()> {
            let t_job = Instant::now();
            let world = &self.worlds[job.scene];
            let plan = &self.plans[job.scene];
            let r = &plan.readings[job.ch][job.idx];
            let t = scene_time(plan, r.ts);
            let view = camera_view(world, &CAMERAS[job.ch], t, w, h);
            let solids = solids_at(world, t);
            let jpeg = CANVAS.with(|c| {
                let mut canvas = c.borrow_mut();
                render::render_into(&mut canvas, &view, &self.grounds[job.scene], &solids, false);
                render::encode_jpeg(&canvas.rgb, w, h, opts.jpeg_quality)
            })?;
            write_atomic(&out.join(&r.filename), &jpeg)?;
            render_ns.fetch_add(t_job.elapsed().as_nanos() as u64, Ordering::Relaxed);
            Ok(())
        })
    }

    /// How much of each box the six keyframe images show, from a depth-only pass at a fixed
    /// resolution so that the tables do not depend on the image size chosen.
    fn keyframe_coverage(&self, jobs: &[Job]) -> KeyframeCoverage {
        let (worlds, plans) = (&self.worlds, &self.plans);
        let keys: Vec<&Job> = jobs
            .iter()
            .filter(|j| plans[j.scene].readings[j.ch][j.idx].key)
            .collect();
        let counts: Vec<Vec<ObjectPixels>> = keys
            .par_iter()
            .map(|job| {
                let (world, plan) = (&worlds[job.scene], &plans[job.scene]);
                let t = scene_time(plan, plan.readings[job.ch][job.idx].ts);
                let view = camera_view(world, &CAMERAS[job.ch], t, VIS_WIDTH, VIS_HEIGHT);
                let solids = solids_at(world, t);
                CANVAS.with(|c| render::coverage_into(&mut c.borrow_mut(), &view, &solids))
            })
            .collect();
        let mut kf: KeyframeCoverage = plans
            .iter()
            .map(|p| vec![vec![Vec::new(); 6]; p.sample_ts.len()])
            .collect();
        for (job, c) in keys.iter().zip(counts) {
            kf[job.scene][plans[job.scene].readings[job.ch][job.idx].sample][job.ch] = c;
        }
        kf
    }
}

/// One scene's table rows and point clouds, with the tokens its tables share.
struct SceneRows<'a> {
    seed: u64,
    /// The scene's index in the corpus.
    k: usize,
    world: &'a SceneWorld,
    plan: &'a ScenePlan,
    /// Image width and height.
    size: (u32, u32),
    sample_tok: Vec<String>,
}

impl<'a> SceneRows<'a> {
    fn new(
        seed: u64,
        k: usize,
        world: &'a SceneWorld,
        plan: &'a ScenePlan,
        size: (u32, u32),
    ) -> Self {
        let sample_tok = (0..plan.sample_ts.len())
            .map(|i| token(seed, &format!("sample/{k}/{i}")))
            .collect();
        Self {
            seed,
            k,
            world,
            plan,
            size,
            sample_tok,
        }
    }

    fn tok(&self, name: &str) -> String {
        token(self.seed, name)
    }

    /// The scene's log, scene and sample rows; returns the log's token.
    fn push_scene(&self, t: &mut Tables) -> String {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let sample_tok = &self.sample_tok;
        let scene_tok = self.tok(&format!("scene/{k}"));
        let log_tok = self.tok(&format!("log/{k}"));
        t.log.push(Log {
            token: log_tok.clone(),
            logfile: plan.logfile.clone(),
            vehicle: world.place.vehicle.into(),
            date_captured: plan.date.clone(),
            location: world.place.location.into(),
        });
        let n_samples = plan.sample_ts.len();
        t.scene.push(Scene {
            token: scene_tok.clone(),
            log_token: log_tok.clone(),
            nbr_samples: n_samples as u32,
            first_sample_token: sample_tok[0].clone(),
            last_sample_token: sample_tok[n_samples - 1].clone(),
            name: world.name.clone(),
            description: format!(
                "synthetic: {} [{}]",
                world.script.description, world.script.name
            ),
        });
        for (i, &ts) in plan.sample_ts.iter().enumerate() {
            t.sample.push(Sample {
                token: sample_tok[i].clone(),
                timestamp: ts,
                prev: if i > 0 {
                    sample_tok[i - 1].clone()
                } else {
                    String::new()
                },
                next: sample_tok.get(i + 1).cloned().unwrap_or_default(),
                scene_token: scene_tok.clone(),
            });
        }
        log_tok
    }

    /// The scene's calibrated sensors, one per channel; returns their tokens by channel.
    fn push_calibrated_sensors(&self, t: &mut Tables) -> Vec<String> {
        let k = self.k;
        let (w, h) = self.size;
        let cs_tok: Vec<String> = (0..7)
            .map(|ch| self.tok(&format!("calibrated_sensor/{k}/{}", channel_name(ch))))
            .collect();
        for ch in 0..7 {
            let (translation, rotation, camera_intrinsic) = if ch == LIDAR {
                (rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION, None)
            } else {
                let c = &CAMERAS[ch];
                (c.translation, c.rotation, Some(c.intrinsic(w, h)))
            };
            t.calibrated_sensor.push(CalibratedSensor {
                token: cs_tok[ch].clone(),
                sensor_token: self.tok(&format!("sensor/{}", channel_name(ch))),
                translation,
                rotation,
                camera_intrinsic,
            });
        }
        cs_tok
    }

    /// sample_data and their ego poses, channel by channel; returns the number of images.
    fn push_sample_data(&self, t: &mut Tables, cs_tok: &[String]) -> usize {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let (w, h) = self.size;
        let mut images = 0;
        for (ch, list) in plan.readings.iter().enumerate() {
            let name = channel_name(ch);
            let sd_tok = |r: &Reading| self.tok(&format!("sample_data/{k}/{name}/{}", r.n));
            for (i, r) in list.iter().enumerate() {
                let ep_tok = self.tok(&format!("ego_pose/{k}/{name}/{}", r.n));
                let e = world.ego_state(scene_time(plan, r.ts));
                t.ego_pose.push(EgoPose {
                    token: ep_tok.clone(),
                    timestamp: r.ts,
                    rotation: quat_from_yaw(e.yaw),
                    translation: [e.x, e.y, 0.0],
                });
                let (fileformat, width, height) = if ch == LIDAR {
                    ("pcd", 0, 0)
                } else {
                    ("jpg", w, h)
                };
                t.sample_data.push(SampleData {
                    token: sd_tok(r),
                    sample_token: self.sample_tok[r.sample].clone(),
                    ego_pose_token: ep_tok,
                    calibrated_sensor_token: cs_tok[ch].clone(),
                    timestamp: r.ts,
                    fileformat: fileformat.into(),
                    is_key_frame: r.key,
                    height,
                    width,
                    filename: r.filename.clone(),
                    prev: if i > 0 {
                        sd_tok(&list[i - 1])
                    } else {
                        String::new()
                    },
                    next: list.get(i + 1).map(sd_tok).unwrap_or_default(),
                });
                if ch != LIDAR {
                    images += 1;
                }
            }
        }
        images
    }

    /// Which samples annotate each agent: from its first to its last in-range sample.
    fn annotated_samples(&self) -> BTreeMap<u32, Vec<usize>> {
        let (world, plan) = (self.world, self.plan);
        let mut per_agent: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &ts) in plan.sample_ts.iter().enumerate() {
            let tt = scene_time(plan, ts);
            let e = world.ego_state(tt);
            for a in &world.agents {
                let st = a.state(tt);
                let d = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
                if d <= ANNOTATION_RANGE {
                    per_agent.entry(a.id).or_default().push(i);
                }
            }
        }
        per_agent
    }

    /// Instances and sample annotations of every annotated agent, agent by agent; returns the
    /// object returns of the lidar per sample, gathered while annotating (`kf`: this scene's
    /// keyframe coverage).
    fn push_annotations(
        &self,
        t: &mut Tables,
        kf: &[Vec<Vec<ObjectPixels>>],
    ) -> Vec<Vec<[f32; 5]>> {
        let mut clouds: Vec<Vec<[f32; 5]>> = vec![Vec::new(); self.plan.sample_ts.len()];
        let lidar_cs = pose(rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION);
        for (&id, samples) in &self.annotated_samples() {
            self.push_agent(t, id, samples, kf, &lidar_cs, &mut clouds);
        }
        clouds
    }

    /// One agent's instance and its annotations over `samples`, adding its lidar returns to
    /// `clouds` (`lidar_cs`: lidar → ego).
    fn push_agent(
        &self,
        t: &mut Tables,
        id: u32,
        samples: &[usize],
        kf: &[Vec<Vec<ObjectPixels>>],
        lidar_cs: &Isometry3<f64>,
        clouds: &mut [Vec<[f32; 5]>],
    ) {
        let (k, world, plan) = (self.k, self.world, self.plan);
        let agent = &world.agents[id as usize];
        let (first, last) = (samples[0], samples[samples.len() - 1]);
        let ann_tok = |i: usize| self.tok(&format!("sample_annotation/{k}/{id}/{i}"));
        let inst_tok = self.tok(&format!("instance/{k}/{id}"));
        t.instance.push(Instance {
            token: inst_tok.clone(),
            category_token: self.tok(&format!("category/{}", agent.kind.category)),
            nbr_annotations: (last - first + 1) as u32,
            first_annotation_token: ann_tok(first),
            last_annotation_token: ann_tok(last),
        });
        for i in first..=last {
            let tt = scene_time(plan, plan.sample_ts[i]);
            let st = agent.state(tt);
            let frac = visible_fraction(&kf[i], id);
            let lidar_to_global = ego_iso(world, tt) * lidar_cs;
            let lidar_pos = lidar_to_global.translation.vector;
            let dist = (Vector3::from(st.center) - lidar_pos).norm();
            let faces = facing_faces(st.center, st.yaw, agent.size, lidar_pos);
            let exposed: f64 = faces.iter().map(|f| f.3).sum();
            let n_lidar = if dist > LIDAR_RANGE || frac < 0.05 {
                0
            } else {
                (LIDAR_DENSITY * frac * exposed / (dist * dist)).round() as usize
            };
            let is_vehicle = agent.kind.category.starts_with("vehicle.");
            let n_radar = if is_vehicle && dist < 80.0 && frac > 0.1 {
                (2.0 + 40.0 * frac / dist.max(1.0)).round() as i64
            } else {
                0
            };
            if n_lidar > 0 {
                let mut rng = Rng::new(self.seed, &format!("lidar/{k}/{i}/{id}"));
                let inv = lidar_to_global.inverse();
                object_returns(
                    &mut rng,
                    n_lidar,
                    &faces,
                    exposed,
                    st.center,
                    &inv,
                    &mut clouds[i],
                );
            }
            t.sample_annotation.push(SampleAnnotation {
                token: ann_tok(i),
                sample_token: self.sample_tok[i].clone(),
                instance_token: inst_tok.clone(),
                visibility_token: visibility_token(frac).into(),
                attribute_tokens: attribute_names(agent, st.speed)
                    .iter()
                    .map(|n| self.tok(&format!("attribute/{n}")))
                    .collect(),
                translation: st.center,
                size: agent.size,
                rotation: quat_from_yaw(st.yaw),
                prev: if i > first {
                    ann_tok(i - 1)
                } else {
                    String::new()
                },
                next: if i < last {
                    ann_tok(i + 1)
                } else {
                    String::new()
                },
                num_lidar_pts: n_lidar as i64,
                num_radar_pts: n_radar,
            });
        }
    }

    /// Writes the point clouds: the object returns (`clouds`, per sample) plus a few rings of
    /// ground just below z = 0; returns the number of files.
    fn write_point_clouds(&self, out: &Path, mut clouds: Vec<Vec<[f32; 5]>>) -> Result<usize> {
        let (world, plan) = (self.world, self.plan);
        let lidar_cs = pose(rig::LIDAR_TOP_TRANSLATION, rig::LIDAR_TOP_ROTATION);
        let mut files = 0;
        for r in &plan.readings[LIDAR] {
            let tt = scene_time(plan, r.ts);
            let lidar_to_global = ego_iso(world, tt) * lidar_cs;
            let inv = lidar_to_global.inverse();
            // Object returns only on keyframe sweeps (where the boxes are); sweeps get ground.
            let mut pts = if r.key {
                std::mem::take(&mut clouds[r.sample])
            } else {
                Vec::new()
            };
            for ring in 0..4 {
                let radius = 4.0 + 3.0 * f64::from(ring);
                for a in 0..90 {
                    let ang = f64::from(a) * std::f64::consts::TAU / 90.0;
                    let pg = lidar_to_global.translation.vector
                        + Vector3::new(radius * ang.cos(), radius * ang.sin(), 0.0);
                    let pl = inv * Point3::new(pg.x, pg.y, -0.02);
                    pts.push([pl.x as f32, pl.y as f32, pl.z as f32, 12.0, ring as f32]);
                }
            }
            let bytes: Vec<u8> = pts
                .iter()
                .flat_map(|p| p.iter().flat_map(|v| v.to_le_bytes()))
                .collect();
            write_atomic(&out.join(&r.filename), &bytes)?;
            files += 1;
        }
        Ok(files)
    }
}

/// The share of box `id` that a sample's six keyframe images show (0 when none shows it).
fn visible_fraction(cameras: &[Vec<ObjectPixels>], id: u32) -> f64 {
    let (vis, sil) = cameras
        .iter()
        .flatten()
        .filter(|o| o.id == id)
        .fold((0u64, 0u64), |(v, s), o| {
            (v + u64::from(o.visible), s + u64::from(o.silhouette))
        });
    if sil > 0 {
        vis as f64 / sil as f64
    } else {
        0.0
    }
}

/// `n` lidar returns on a box's facing `faces` (global; `exposed`: their total visible area),
/// each face drawn by its visible area, pushed onto `cloud` in the lidar frame (`inv`:
/// global → lidar) as x, y, z, intensity, ring.
fn object_returns(
    rng: &mut Rng,
    n: usize,
    faces: &[FacingFace],
    exposed: f64,
    center: [f64; 3],
    inv: &Isometry3<f64>,
    cloud: &mut Vec<[f32; 5]>,
) {
    let total: f64 = exposed.max(1e-9);
    for _ in 0..n {
        let mut pick = rng.unit() * total;
        let mut face = &faces[0];
        for f in faces {
            face = f;
            if pick < f.3 {
                break;
            }
            pick -= f.3;
        }
        // Slightly inside the box so that `points_in_box` counts it.
        let p = face.0 * 1.0 + face.1 * rng.range(-0.96, 0.96) + face.2 * rng.range(-0.96, 0.96);
        let inward = (Vector3::from(center) - face.0) * 0.02;
        let pl = inv * Point3::from(p + inward);
        let elev = (pl.z / (pl.x * pl.x + pl.y * pl.y).sqrt().max(0.1))
            .atan()
            .to_degrees();
        let ring = ((elev + 30.0) / 40.0 * 31.0).clamp(0.0, 31.0).round();
        cloud.push([
            pl.x as f32,
            pl.y as f32,
            pl.z as f32,
            rng.range(5.0, 90.0).round() as f32,
            ring as f32,
        ]);
    }
}

/// One map mask per location used, covering that location's roads at 1 m per pixel
/// (`log_locations`: each log's location and token).
fn write_map_masks(
    out: &Path,
    seed: u64,
    log_locations: &[(String, String)],
    worlds: &[SceneWorld],
    t: &mut Tables,
) -> Result<()> {
    for place in PLACES {
        let logs: Vec<String> = log_locations
            .iter()
            .filter(|(location, _)| location == place.location)
            .map(|(_, token)| token.clone())
            .collect();
        if logs.is_empty() {
            continue;
        }
        let map_tok = token(seed, &format!("map/{}", place.location));
        let filename = format!("maps/{map_tok}.png");
        let roads: Vec<_> = worlds
            .iter()
            .filter(|w| w.place.location == place.location)
            .flat_map(|w| w.roads.iter())
            .collect();
        write_atomic(&out.join(&filename), &map_png(&roads)?)?;
        t.map.push(Map {
            token: map_tok,
            log_tokens: logs,
            category: "semantic_prior".into(),
            filename,
        });
    }
    Ok(())
}

/// Writes the dataroot.
pub fn write(out: &Path, opts: &SynthOptions) -> Result<SynthSummary> {
    opts.validate()?;
    let _owned = crate::store::owner::Owned::claim(out, "synthetic corpus", "the corpus")?;
    let started = Instant::now();
    let seed = opts.seed;
    let mut t = fixed_tables(seed);

    let mut lidar_files = 0usize;
    let mut images = 0usize;
    let mut job_count = 0usize;
    let render_ns = AtomicU64::new(0);
    let size = (opts.image_width, opts.image_height);
    // Worlds are built, drawn and written a few scenes at a time, and their table rows go to
    // disk after each chunk, so memory stays flat however many scenes are asked for. Only the
    // road layout of each world is kept, for the map masks and layers written at the end.
    let chunk = (2 * rayon::current_num_threads()).max(1);
    let mut streams = TableStreams::create(&out.join(&opts.version))?;
    let mut log_locations: Vec<(String, String)> = Vec::new();
    let mut layouts: Vec<SceneWorld> = Vec::new();
    let bar = crate::progress::bar(opts.scenes as u64, "synth scenes");
    for start in (0..opts.scenes).step_by(chunk) {
        let end = (start + chunk).min(opts.scenes);
        let c = Chunk::build(opts, start..end)?;
        let jobs = c.jobs();
        job_count += jobs.len();
        c.render_images(out, opts, &jobs, &render_ns)?;
        let kf = c.keyframe_coverage(&jobs);
        for (local, (world, plan)) in c.worlds.iter().zip(&c.plans).enumerate() {
            let scene = SceneRows::new(seed, start + local, world, plan, size);
            let log_tok = scene.push_scene(&mut t);
            log_locations.push((world.place.location.to_string(), log_tok));
            let cs_tok = scene.push_calibrated_sensors(&mut t);
            images += scene.push_sample_data(&mut t, &cs_tok);
            let clouds = scene.push_annotations(&mut t, &kf[local]);
            lidar_files += scene.write_point_clouds(out, clouds)?;
        }
        streams.flush(&mut t)?;
        layouts.extend(c.worlds.into_iter().map(SceneWorld::layout_only));
        bar.inc((end - start) as u64);
    }
    bar.finish_and_clear();
    let worlds = layouts;

    write_map_masks(out, seed, &log_locations, &worlds, &mut t)?;
    // The road layout as map-expansion polygons (STSBench's map layers).
    super::map::write_expansions(out, seed, &worlds)?;

    streams.flush(&mut t)?;
    let n = streams.finish()?;
    let summary = SynthSummary {
        out: out.to_path_buf(),
        version: opts.version.clone(),
        scenes: n["scene"],
        samples: n["sample"],
        sample_data: n["sample_data"],
        ego_poses: n["ego_pose"],
        instances: n["instance"],
        annotations: n["sample_annotation"],
        images,
        lidar_files,
        render_ms_per_image: if job_count == 0 {
            0.0
        } else {
            render_ns.load(Ordering::Relaxed) as f64 / 1e6 / job_count as f64
        },
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    Ok(summary)
}

/// A road mask (255 between the kerbs) at 1 m per pixel over the roads' bounding box, with the
/// box's minimum at the bottom-left as in nuScenes' map masks.
fn map_png(roads: &[&super::world::Road]) -> Result<Vec<u8>> {
    const RES: f64 = 1.0;
    const MAX_SIDE: u32 = 4096;
    let mut lo = [f64::INFINITY; 2];
    let mut hi = [f64::NEG_INFINITY; 2];
    for r in roads {
        for (s, d) in [
            (r.s_min, -r.half_width()),
            (r.s_min, r.half_width()),
            (r.s_max, -r.half_width()),
            (r.s_max, r.half_width()),
        ] {
            let p = r.point(s, d);
            for a in 0..2 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
    }
    if !lo[0].is_finite() {
        lo = [0.0; 2];
        hi = [1.0; 2];
    }
    let wpx = (((hi[0] - lo[0]) / RES).ceil() as u32).clamp(1, MAX_SIDE);
    let hpx = (((hi[1] - lo[1]) / RES).ceil() as u32).clamp(1, MAX_SIDE);
    let mut img = image::GrayImage::new(wpx, hpx);
    for (x, y, px) in img.enumerate_pixels_mut() {
        let p = [
            lo[0] + (f64::from(x) + 0.5) * RES,
            lo[1] + (f64::from(hpx - 1 - y) + 0.5) * RES,
        ];
        if roads.iter().any(|r| r.on_carriageway(p, 0.0)) {
            px.0 = [255];
        }
    }
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .map_err(|e| Error::Tool {
            tool: "png encoder".into(),
            detail: e.to_string(),
        })?;
    Ok(out)
}

/// The 13 tables as they will be written.
#[derive(Default)]
struct Tables {
    category: Vec<Category>,
    attribute: Vec<Attribute>,
    visibility: Vec<Visibility>,
    instance: Vec<Instance>,
    sensor: Vec<Sensor>,
    calibrated_sensor: Vec<CalibratedSensor>,
    ego_pose: Vec<EgoPose>,
    log: Vec<Log>,
    scene: Vec<Scene>,
    sample: Vec<Sample>,
    sample_data: Vec<SampleData>,
    sample_annotation: Vec<SampleAnnotation>,
    map: Vec<Map>,
}

/// The 13 table files, written as JSON arrays a chunk of rows at a time.
struct TableStreams {
    files: BTreeMap<&'static str, (crate::store::atomic::AtomicFile, usize)>,
}

/// Each row pretty-printed and indented as `serde_json::to_vec_pretty` prints an array.
fn append_rows<T: Serialize>(
    streams: &mut TableStreams,
    name: &'static str,
    rows: &mut Vec<T>,
) -> Result<()> {
    use std::io::Write;
    let Some((f, n)) = streams.files.get_mut(name) else {
        return Ok(());
    };
    let path = f.path().to_path_buf();
    for row in rows.drain(..) {
        let text = serde_json::to_string_pretty(&row)
            .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        let mut chunk = String::with_capacity(text.len() + 64);
        chunk.push_str(if *n == 0 { "[\n" } else { ",\n" });
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                chunk.push('\n');
            }
            chunk.push_str("  ");
            chunk.push_str(line);
        }
        f.write_all(chunk.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
        *n += 1;
    }
    Ok(())
}

impl TableStreams {
    const NAMES: [&'static str; 13] = [
        "category",
        "attribute",
        "visibility",
        "instance",
        "sensor",
        "calibrated_sensor",
        "ego_pose",
        "log",
        "scene",
        "sample",
        "sample_data",
        "sample_annotation",
        "map",
    ];

    fn create(dir: &Path) -> Result<Self> {
        let mut files = BTreeMap::new();
        for name in Self::NAMES {
            let f = crate::store::atomic::AtomicFile::create(&dir.join(format!("{name}.json")))?;
            files.insert(name, (f, 0));
        }
        Ok(Self { files })
    }

    /// Appends every row of `t` and empties it.
    fn flush(&mut self, t: &mut Tables) -> Result<()> {
        append_rows(self, "category", &mut t.category)?;
        append_rows(self, "attribute", &mut t.attribute)?;
        append_rows(self, "visibility", &mut t.visibility)?;
        append_rows(self, "instance", &mut t.instance)?;
        append_rows(self, "sensor", &mut t.sensor)?;
        append_rows(self, "calibrated_sensor", &mut t.calibrated_sensor)?;
        append_rows(self, "ego_pose", &mut t.ego_pose)?;
        append_rows(self, "log", &mut t.log)?;
        append_rows(self, "scene", &mut t.scene)?;
        append_rows(self, "sample", &mut t.sample)?;
        append_rows(self, "sample_data", &mut t.sample_data)?;
        append_rows(self, "sample_annotation", &mut t.sample_annotation)?;
        append_rows(self, "map", &mut t.map)
    }

    /// Closes the arrays, moves the files into place and returns the row count per table.
    fn finish(self) -> Result<BTreeMap<&'static str, usize>> {
        use std::io::Write;
        let mut counts = BTreeMap::new();
        for (name, (mut f, n)) in self.files {
            let end: &[u8] = if n == 0 { b"[]" } else { b"\n]" };
            let path = f.path().to_path_buf();
            f.write_all(end).map_err(|e| Error::io(&path, e))?;
            f.commit()?;
            counts.insert(name, n);
        }
        Ok(counts)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2018-07-24 is day 17736.
        assert_eq!(civil_from_days(17_736), (2018, 7, 24));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        let (d, c) = local_time(T0_US, 8);
        assert_eq!((d.as_str(), c.as_str()), ("2018-07-24", "11-28-47"));
    }

    #[test]
    fn visibility_bins() {
        assert_eq!(visibility_token(0.0), "1");
        assert_eq!(visibility_token(0.5), "2");
        assert_eq!(visibility_token(0.79), "3");
        assert_eq!(visibility_token(1.0), "4");
    }
}
