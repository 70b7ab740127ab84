//! `drivegen bench visibility`: camera-frames/s of the visibility stage's geometry (projection
//! of every box plus the z-buffer) at nuScenes size, on the GPU and on the CPU twin, and, when
//! a Python with nuscenes-devkit is at hand, MetaVQA's own method on the same frames
//! (`benches/reference/visibility.py`: devkit projection + painter's filled rectangles).
//!
//! The frames are synthetic but shaped like nuScenes keyframes: the real CAM_FRONT calibration
//! at 1600×900, ego poses anywhere in a 4 km map (the f32 cancellation that matters on the
//! GPU), and about 50 boxes of realistic sizes around the ego, most of them in front so the
//! image is busy with overlaps. The same seed gives the same frames.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::config::StageConfig;
use crate::geometry::{quat_from_yaw, wxyz};
use crate::store::Pose;
use crate::synth::rig::CAMERAS;
use crate::synth::tokens::Rng;
use crate::visibility::project::{camera, project_box, BoxGeom, Camera};
use crate::visibility::raster::{RasterJob, RasterOut, Rasteriser, Tri};
use crate::{Error, Result};

/// What to measure.
#[derive(Debug, Clone)]
pub(crate) struct VisibilityBench {
    pub frames: usize,
    pub boxes: usize,
    pub width: u32,
    pub height: u32,
    pub seed: u64,
    /// Timed repetitions; the best is reported (the first run also warms caches and pipelines).
    pub repeats: usize,
}

impl Default for VisibilityBench {
    fn default() -> Self {
        Self {
            frames: 256,
            boxes: 50,
            width: 1600,
            height: 900,
            seed: 0,
            repeats: 3,
        }
    }
}

/// One synthetic camera frame.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BenchFrame {
    pub width: u32,
    pub height: u32,
    /// `[fx, fy, cx, cy]`.
    pub intrinsics: [f64; 4],
    /// Sensor → ego.
    pub cam: Pose,
    /// Ego → global.
    pub ego: Pose,
    pub boxes: Vec<BenchBox>,
}

/// One box of a frame (global frame, nuScenes conventions).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct BenchBox {
    pub center: [f64; 3],
    pub size_wlh: [f64; 3],
    pub q: [f64; 4],
}

/// `(w, l, h)` of the classes the frames draw from, with weights like nuScenes' mix.
const SHAPES: [([f64; 3], f64); 6] = [
    ([1.95, 4.6, 1.7], 0.45),  // car
    ([0.7, 0.7, 1.75], 0.2),   // pedestrian
    ([2.6, 8.5, 3.2], 0.1),    // truck
    ([2.9, 11.5, 3.4], 0.05),  // bus
    ([0.45, 0.45, 0.9], 0.12), // traffic cone
    ([0.6, 2.2, 1.1], 0.08),   // barrier
];

/// The frames of a benchmark run (deterministic in `seed`).
pub(crate) fn frames(b: &VisibilityBench) -> Vec<BenchFrame> {
    let front = &CAMERAS[0];
    let k = front.intrinsic(b.width, b.height);
    (0..b.frames)
        .map(|f| {
            let mut rng = Rng::new(b.seed, &format!("bench/visibility/{f}"));
            let ex = rng.range(-2000.0, 2000.0);
            let ey = rng.range(-2000.0, 2000.0);
            let yaw = rng.range(-std::f64::consts::PI, std::f64::consts::PI);
            let boxes = (0..b.boxes)
                .map(|_| {
                    let mut pick = rng.unit();
                    let mut wlh = SHAPES[0].0;
                    for (s, w) in SHAPES {
                        wlh = s;
                        if pick < w {
                            break;
                        }
                        pick -= w;
                    }
                    // Three in four in the front camera's ±35° wedge, the rest all around.
                    let bearing = if rng.unit() < 0.75 {
                        rng.range(-0.6, 0.6)
                    } else {
                        rng.range(-std::f64::consts::PI, std::f64::consts::PI)
                    };
                    let dist = rng.range(3.0, 70.0);
                    let (s, c) = (yaw + bearing).sin_cos();
                    BenchBox {
                        center: [ex + dist * c, ey + dist * s, wlh[2] / 2.0],
                        size_wlh: wlh,
                        q: quat_from_yaw(rng.range(-3.2, 3.2)),
                    }
                })
                .collect();
            BenchFrame {
                width: b.width,
                height: b.height,
                intrinsics: [k[0][0], k[1][1], k[0][2], k[1][2]],
                cam: Pose {
                    t: front.translation,
                    q: front.rotation,
                },
                ego: Pose {
                    t: [ex, ey, 0.0],
                    q: wxyz(&nalgebra::UnitQuaternion::from_euler_angles(0.0, 0.0, yaw)),
                },
                boxes,
            }
        })
        .collect()
}

/// The triangles of one frame (all boxes projected, near-plane clipped).
fn project_frame(f: &BenchFrame, cam: &Camera, near: f64) -> (u32, Vec<Tri>) {
    let mut n = 0u32;
    let mut tris = Vec::new();
    for b in &f.boxes {
        let g = BoxGeom {
            center: b.center,
            size_wlh: b.size_wlh,
            q: b.q,
        };
        if let Some(p) = project_box(cam, &g, near) {
            tris.extend(p.raster_tris(n));
            n += 1;
        }
    }
    (n, tris)
}

/// One measured configuration.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    pub what: String,
    pub frames: usize,
    /// Best wall time of projection + z-buffer (s).
    pub total_s: f64,
    /// Best wall time of the z-buffer alone (s).
    pub raster_s: f64,
}

impl Timing {
    pub fn frames_per_s(&self) -> f64 {
        self.frames as f64 / self.total_s.max(1e-12)
    }

    pub(crate) fn raster_frames_per_s(&self) -> f64 {
        self.frames as f64 / self.raster_s.max(1e-12)
    }
}

/// Times `rasteriser` on `frames`: projection on all CPU threads, then the z-buffer in the
/// rasteriser's batches. Returns the timing and the visible-pixel total (to check that every
/// implementation computed the same thing).
pub(crate) fn time_rasteriser(
    frames: &[BenchFrame],
    rasteriser: &dyn Rasteriser,
    repeats: usize,
) -> Result<(Timing, u64)> {
    let cams: Vec<Camera> = frames
        .iter()
        .map(|f| camera(f.width, f.height, f.intrinsics, f.cam, f.ego))
        .collect();
    let mut best = (f64::INFINITY, f64::INFINITY);
    let mut visible = 0u64;
    for _ in 0..repeats.max(1) {
        let t0 = Instant::now();
        let projected: Vec<(u32, Vec<Tri>)> = frames
            .par_iter()
            .zip(&cams)
            .map(|(f, c)| project_frame(f, c, 0.1))
            .collect();
        let t1 = Instant::now();
        let mut total = 0u64;
        for chunk in projected
            .chunks(rasteriser.batch_size().max(1))
            .zip(frames.chunks(rasteriser.batch_size().max(1)))
        {
            let jobs: Vec<RasterJob<'_>> = chunk
                .0
                .iter()
                .zip(chunk.1)
                .map(|((n, tris), f)| RasterJob {
                    width: f.width,
                    height: f.height,
                    num_objects: *n,
                    tris,
                    want_maps: false,
                })
                .collect();
            let outs: Vec<RasterOut> = rasteriser.raster_batch(&jobs)?;
            total += outs
                .iter()
                .flat_map(|o| &o.objects)
                .map(|s| u64::from(s.visible_pixels))
                .sum::<u64>();
        }
        let t2 = Instant::now();
        let (p, r) = ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64());
        if p + r < best.0 {
            best = (p + r, r);
        }
        visible = total;
    }
    Ok((
        Timing {
            what: rasteriser.name().to_string(),
            frames: frames.len(),
            total_s: best.0,
            raster_s: best.1,
        },
        visible,
    ))
}

/// Writes the frames for the Python reference.
pub(crate) fn export(frames: &[BenchFrame], path: &Path) -> Result<()> {
    let json = serde_json::to_vec(frames).map_err(|e| Error::Config {
        file: path.to_path_buf(),
        detail: format!("cannot serialise the benchmark frames: {e}"),
    })?;
    crate::store::atomic::write_atomic(path, &json)
}

/// Runs `benches/reference/visibility.py` with `python` on the exported frames and returns its
/// frames/s (it prints `frames_per_s=<x>` last).
pub(crate) fn run_reference(python: &Path, script: &Path, frames_file: &Path) -> Result<f64> {
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(frames_file)
        .output()
        .map_err(|e| Error::Io {
            path: python.to_path_buf(),
            source: e,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Error::Tool {
            tool: script.display().to_string(),
            detail: format!(
                "failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("frames_per_s="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::Tool {
            tool: script.display().to_string(),
            detail: format!("no frames_per_s= line in its output: {stdout}"),
        })
}

/// The table the command prints last.
pub(crate) fn table(
    b: &VisibilityBench,
    device: &str,
    rows: &[Timing],
    reference: Option<(f64, usize)>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "visibility bench: {} frames of {}×{} with {} boxes (seed {}), best of {}; device: {device}; {} CPU threads",
        b.frames,
        b.width,
        b.height,
        b.boxes,
        b.seed,
        b.repeats,
        rayon::current_num_threads()
    );
    let _ = writeln!(
        s,
        "| implementation | camera-frames/s (projection + z-buffer) | z-buffer only | vs Python reference |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|");
    for t in rows {
        let vs = reference
            .map(|(r, _)| format!("{:.2}×", t.frames_per_s() / r))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {vs} |",
            t.what,
            t.frames_per_s(),
            t.raster_frames_per_s()
        );
    }
    if let Some((r, n)) = reference {
        let _ = writeln!(
            s,
            "| python (MetaVQA: devkit projection + painter's rectangles, {n} frames) | {r:.1} | – | 1× |"
        );
    }
    s
}

/// Where the reference script lives (next to the binary's source tree, or under `cwd`).
pub(crate) fn reference_script() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/reference/visibility.py");
    if here.is_file() {
        here
    } else {
        PathBuf::from("benches/reference/visibility.py")
    }
}

/// The many-box case: one keyframe holding `boxes` car-sized boxes on a 1 m grid centred on the
/// ego (100 to a row), seen by the five Waymo cameras at `width × height` with the synthetic
/// Waymo lens ([`crate::synth::waymo::DEFAULT_DISTORTION`]), or pinhole with `pinhole`. The
/// boxes overlap each other, the ego and every camera's near plane, so each image holds
/// thousands of them at every depth: the frame that showed the stage's memory growing with
/// boxes × pixels.
#[derive(Debug, Clone)]
pub(crate) struct ManyBoxes {
    pub boxes: usize,
    pub width: u32,
    pub height: u32,
    pub pinhole: bool,
}

/// What one run of the stage on the many-box store took.
#[derive(Debug, Clone)]
pub(crate) struct ManyBoxesRun {
    pub seconds: f64,
    /// The process's peak resident memory during the run (MiB; `None` off Linux).
    pub peak_rss_mib: Option<f64>,
    pub camera_images: u64,
    pub rows: u64,
    /// Raster triangles over all images (boxes after near-plane clipping and, through the lens,
    /// tessellation).
    pub triangles: u64,
    /// The most triangles one box gave in one image.
    pub max_box_triangles: u64,
}

/// The many-box scene (one frame) as store rows.
pub(crate) fn many_boxes_scene(m: &ManyBoxes) -> Result<crate::store::SceneData> {
    use crate::store::{CameraRow, FrameRow, ObjectRow, SceneData, SceneRow};
    use crate::synth::rig::CAMERAS as RIG;
    let sid = "many-boxes".to_string();
    let ego = Pose {
        t: [1000.0, 2000.0, 0.0],
        q: quat_from_yaw(0.3),
    };
    let cameras = crate::synth::waymo::CAMERAS
        .iter()
        .map(|&(_, name, channel)| {
            let spec = RIG
                .iter()
                .find(|c| c.channel == channel)
                .ok_or_else(|| Error::Internal(format!("bench: no rig camera {channel}")))?;
            let k = spec.intrinsic(m.width, m.height);
            Ok(CameraRow {
                scene_id: sid.clone(),
                frame_idx: 0,
                camera: name.to_string(),
                camera_frame_id: format!("many-boxes-{name}"),
                is_keyframe: true,
                image_path: format!("{name}.jpg"),
                width: m.width,
                height: m.height,
                fx: k[0][0],
                fy: k[1][1],
                cx: k[0][2],
                cy: k[1][2],
                cam: Pose {
                    t: spec.translation,
                    q: spec.rotation,
                },
                ego,
                distortion: (!m.pinhole).then_some(crate::synth::waymo::DEFAULT_DISTORTION),
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let objects = (0..m.boxes)
        .map(|k| {
            let (row, col) = ((k / 100) as f64, (k % 100) as f64);
            ObjectRow {
                scene_id: sid.clone(),
                frame_idx: 0,
                track_id: format!("many-{k:05}"),
                annotation_id: format!("many-{k:05}"),
                category: "vehicle.car".into(),
                class: "car".into(),
                center: [ego.t[0] + row - 50.0, ego.t[1] + col - 50.0, 0.85],
                size_wlh: [1.95, 4.6, 1.7],
                q: quat_from_yaw(0.0),
                num_lidar_pts: 100,
                visibility_bin: Some(4),
                ..Default::default()
            }
        })
        .collect();
    let mut scene = SceneData {
        scene: SceneRow {
            scene_id: sid.clone(),
            source: "synthetic".into(),
            source_scene_id: sid.clone(),
            ..Default::default()
        },
        frames: vec![FrameRow {
            scene_id: sid.clone(),
            frame_idx: 0,
            is_keyframe: true,
            source_frame_id: "0".into(),
            ego,
            ..Default::default()
        }],
        ego_poses: Vec::new(),
        cameras,
        objects,
    };
    scene.update_counts();
    Ok(scene)
}

/// Writes the many-box store to `dir` (which must not exist yet).
pub(crate) fn write_many_boxes_store(m: &ManyBoxes, dir: &Path) -> Result<()> {
    let scene = many_boxes_scene(m)?;
    let meta = crate::store::StoreMeta::new("synthetic", "many-boxes", "");
    let mut w = crate::store::StoreWriter::create(dir, meta)?;
    w.write_scene(&scene)?;
    w.finish(&crate::store::rejects::RejectLog::new())?;
    Ok(())
}

/// Runs the visibility stage on the many-box store at `store` into `out` with `rasteriser`,
/// timing it and taking the process's peak resident memory over the run (the peak is reset
/// first, so what the bench held before does not count).
pub(crate) fn time_many_boxes(
    m: &ManyBoxes,
    store: &Path,
    out: &Path,
    rasteriser: &dyn Rasteriser,
) -> Result<ManyBoxesRun> {
    let cfg = crate::visibility::config::VisibilityConfig::load(None)?;
    let (mut triangles, mut max_box_triangles) = (0u64, 0u64);
    let scene = many_boxes_scene(m)?;
    for c in &scene.cameras {
        let cam = Camera::from_row(c)
            .map_err(|e| Error::Internal(format!("bench: {e}")))?
            .with_lens_tolerance(cfg.projection.lens_chord_tolerance_px);
        let counts: Vec<u64> = scene
            .objects
            .par_iter()
            .filter_map(|o| BoxGeom::from_row(o).ok())
            .map(|b| {
                // Counted as they come: one box can give millions.
                let mut n = 0u64;
                crate::visibility::project::project_box_into(
                    &cam,
                    &b,
                    cfg.projection.near_m,
                    &mut |_| n += 1,
                );
                n
            })
            .collect();
        triangles += counts.iter().sum::<u64>();
        max_box_triangles = max_box_triangles.max(counts.iter().copied().max().unwrap_or(0));
    }
    drop(scene);
    let mut opts = crate::visibility::Options::new(store, out, None)?;
    opts.rasteriser = rasteriser;
    let probe = crate::chain::memory::StepProbe::start();
    let t0 = Instant::now();
    let summary = crate::visibility::run(&opts);
    let seconds = t0.elapsed().as_secs_f64();
    let (_, peak_rss_mib) = probe.finish();
    let summary = summary?;
    Ok(ManyBoxesRun {
        seconds,
        peak_rss_mib,
        camera_images: summary.camera_images,
        rows: summary.rows,
        triangles,
        max_box_triangles,
    })
}
