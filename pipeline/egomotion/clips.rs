//! Cutting 3 s clips out of a scene, resampling them onto the 10 Hz grid, and validating them.
//!
//! Two anchorings (config `clips.anchoring`):
//! * `keyframe_backward` (nuScenes): for every keyframe, the images of `clips.camera` whose
//!   timestamps lie in `[t_kf − 3 s, t_kf]` and not after the keyframe's own image of that
//!   camera (the reference walks backwards from it). Needs ≥ `min_frames` poses spanning
//!   ≥ `min_span_fraction`·3 s. The grid starts at the first pose and lasts exactly 3 s, so
//!   its tail past the last pose is linearly extrapolated, as in the released benchmark.
//! * `sliding` (uniform logs: CARLA, Waymo): windows of `window_samples` poses starting every
//!   `stride` samples (31 and 30: consecutive windows share their boundary sample); a partial
//!   last window is dropped. The grid spans the window's actual duration.
//!
//! Positions are linearly interpolated (extrapolated past the ends, as scipy's
//! `interp1d(fill_value="extrapolate")`), yaw is unwrapped (`numpy.unwrap`) and then
//! interpolated the same way.

use super::config::{Anchoring, ClipConfig, EgodynConfig, PoseSource};
use super::kinematics::{Kinematics, Trajectory};
use crate::geometry::yaw_of;
use crate::store::{CameraRow, SceneData};

/// One raw pose of a clip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseSample {
    pub timestamp_us: i64,
    pub x: f64,
    pub y: f64,
    /// Yaw in (−π, π], not yet unwrapped.
    pub yaw: f64,
}

/// One image of the clip's camera (the candidates for the frames a question shows).
#[derive(Debug, Clone, PartialEq)]
pub struct ClipImage {
    pub camera: String,
    pub camera_frame_id: String,
    pub timestamp_us: i64,
}

/// A clip before resampling.
#[derive(Debug, Clone, PartialEq)]
pub struct RawClip {
    pub clip_id: String,
    pub scene_id: String,
    pub source: String,
    /// The keyframe (keyframe anchoring) or the last sample (sliding) the clip ends at.
    pub anchor_timestamp_us: i64,
    /// The anchoring keyframe's index, when anchored at one.
    pub anchor_frame_idx: Option<u32>,
    /// The grid's duration (s).
    pub duration_s: f64,
    pub samples: Vec<PoseSample>,
    pub images: Vec<ClipImage>,
}

/// A candidate clip that could not be cut, with the reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClipReject {
    pub clip_id: String,
    /// A short category for counting (`too_few_poses`, `short_span`, `no_anchor_image`).
    pub kind: &'static str,
    pub reason: String,
}

fn pose_sample(timestamp_us: i64, t: [f64; 3], q: [f64; 4]) -> PoseSample {
    PoseSample {
        timestamp_us,
        x: t[0],
        y: t[1],
        yaw: yaw_of(q),
    }
}

/// The clips of one scene (and the candidates that were refused), in time order.
pub(crate) fn extract(
    scene: &SceneData,
    source: &str,
    cfg: &ClipConfig,
) -> (Vec<RawClip>, Vec<ClipReject>) {
    let (camera, cams) = clip_camera(scene, cfg);
    let poses = clip_poses(scene, cfg, &cams);
    match cfg.anchoring {
        Anchoring::KeyframeBackward => keyframe_clips(scene, source, cfg, camera, &cams, &poses),
        Anchoring::Sliding => (
            sliding_clips(&scene.scene.scene_id, source, cfg, &cams, &poses),
            Vec::new(),
        ),
    }
}

/// The clip camera's name (the configured one, else the first alias the scene has) and its
/// images in time order, ties broken by id so the order never depends on how the store
/// happened to list them.
fn clip_camera<'a>(scene: &'a SceneData, cfg: &'a ClipConfig) -> (&'a str, Vec<&'a CameraRow>) {
    let camera = std::iter::once(&cfg.camera)
        .chain(&cfg.camera_aliases)
        .find(|n| scene.cameras.iter().any(|c| &c.camera == *n))
        .unwrap_or(&cfg.camera);
    let mut cams: Vec<&CameraRow> = scene
        .cameras
        .iter()
        .filter(|c| &c.camera == camera)
        .collect();
    cams.sort_by(|a, b| {
        a.timestamp_us
            .cmp(&b.timestamp_us)
            .then_with(|| a.camera_frame_id.cmp(&b.camera_frame_id))
    });
    (camera, cams)
}

/// The scene's poses from the configured source, in time order.
fn clip_poses(scene: &SceneData, cfg: &ClipConfig, cams: &[&CameraRow]) -> Vec<PoseSample> {
    let mut poses: Vec<PoseSample> = match cfg.pose_source {
        PoseSource::Camera => cams
            .iter()
            .map(|c| pose_sample(c.timestamp_us, c.ego.t, c.ego.q))
            .collect(),
        PoseSource::EgoPoses => scene
            .ego_poses
            .iter()
            .map(|p| pose_sample(p.timestamp_us, p.ego.t, p.ego.q))
            .collect(),
        PoseSource::Frames => scene
            .frames
            .iter()
            .map(|f| pose_sample(f.timestamp_us, f.ego.t, f.ego.q))
            .collect(),
    };
    // A stable sort keeps duplicate timestamps in input order; validation rejects them later.
    poses.sort_by_key(|p| p.timestamp_us);
    poses
}

fn clip_image(c: &&CameraRow) -> ClipImage {
    ClipImage {
        camera: c.camera.clone(),
        camera_frame_id: c.camera_frame_id.clone(),
        timestamp_us: c.timestamp_us,
    }
}

/// The images of `cams` (in time order) with timestamps in `[lo, hi]`.
fn images_in(cams: &[&CameraRow], lo: i64, hi: i64) -> Vec<ClipImage> {
    let a = cams.partition_point(|c| c.timestamp_us < lo);
    let b = cams.partition_point(|c| c.timestamp_us <= hi);
    cams[a..b.max(a)].iter().map(clip_image).collect()
}

/// The poses (in time order) with timestamps in `[lo, hi]`.
fn poses_in(poses: &[PoseSample], lo: i64, hi: i64) -> Vec<PoseSample> {
    let a = poses.partition_point(|p| p.timestamp_us < lo);
    let b = poses.partition_point(|p| p.timestamp_us <= hi);
    poses[a..b.max(a)].to_vec()
}

/// `keyframe_backward` anchoring: one candidate per keyframe, ending at it; refused without
/// the keyframe's own camera image, with too few poses or with too short a span.
fn keyframe_clips(
    scene: &SceneData,
    source: &str,
    cfg: &ClipConfig,
    camera: &str,
    cams: &[&CameraRow],
    poses: &[PoseSample],
) -> (Vec<RawClip>, Vec<ClipReject>) {
    let scene_id = scene.scene.scene_id.as_str();
    let mut clips = Vec::new();
    let mut rejects = Vec::new();
    let span_us = (cfg.duration_s * 1e6).round() as i64;
    let mut keyframes: Vec<_> = scene.frames.iter().filter(|f| f.is_keyframe).collect();
    keyframes.sort_by_key(|f| (f.timestamp_us, f.frame_idx));
    for kf in keyframes {
        let clip_id = format!("{scene_id}_kf{:04}", kf.frame_idx);
        let t_end = kf.timestamp_us;
        let t_start = t_end - span_us;
        // The reference walks back from the keyframe's own image of the camera, so
        // no later image (and no pose after it) belongs to the clip.
        let own = cams
            .iter()
            .filter(|c| c.is_keyframe && c.frame_idx == kf.frame_idx)
            .map(|c| c.timestamp_us)
            .max();
        let Some(own) = own else {
            rejects.push(ClipReject {
                clip_id,
                kind: "no_anchor_image",
                reason: format!("keyframe {} has no {camera} image", kf.frame_idx),
            });
            continue;
        };
        let hi = t_end.min(own);
        let samples = poses_in(poses, t_start, hi);
        if samples.len() < cfg.min_frames {
            rejects.push(ClipReject {
                clip_id,
                kind: "too_few_poses",
                reason: format!(
                    "only {} poses in the {} s before keyframe {} (need {})",
                    samples.len(),
                    cfg.duration_s,
                    kf.frame_idx,
                    cfg.min_frames
                ),
            });
            continue;
        }
        let span = span_s(&samples);
        let min_span = cfg.duration_s * cfg.min_span_fraction;
        if span < min_span {
            rejects.push(ClipReject {
                clip_id,
                kind: "short_span",
                reason: format!("poses span {span:.3} s, under the minimum {min_span:.3} s"),
            });
            continue;
        }
        let images = match cfg.pose_source {
            PoseSource::Camera => cams_to_images(cams, &samples),
            _ => images_in(cams, t_start, hi),
        };
        clips.push(RawClip {
            clip_id,
            scene_id: scene_id.to_string(),
            source: source.to_string(),
            anchor_timestamp_us: t_end,
            anchor_frame_idx: Some(kf.frame_idx),
            duration_s: cfg.duration_s,
            samples,
            images,
        });
    }
    (clips, rejects)
}

/// `sliding` anchoring: every whole window of `window_samples` poses, `stride` apart.
fn sliding_clips(
    scene_id: &str,
    source: &str,
    cfg: &ClipConfig,
    cams: &[&CameraRow],
    poses: &[PoseSample],
) -> Vec<RawClip> {
    let mut clips = Vec::new();
    let mut w = 0usize;
    while w * cfg.stride + cfg.window_samples <= poses.len() {
        let start = w * cfg.stride;
        let samples = poses[start..start + cfg.window_samples].to_vec();
        let (first, last) = (
            samples[0].timestamp_us,
            samples[samples.len() - 1].timestamp_us,
        );
        let images = match cfg.pose_source {
            PoseSource::Camera => cams[start..start + cfg.window_samples]
                .iter()
                .map(clip_image)
                .collect(),
            _ => images_in(cams, first, last),
        };
        clips.push(RawClip {
            clip_id: format!("{scene_id}__w{w}"),
            scene_id: scene_id.to_string(),
            source: source.to_string(),
            anchor_timestamp_us: last,
            anchor_frame_idx: None,
            duration_s: span_s(&samples),
            samples,
            images,
        });
        w += 1;
    }
    clips
}

/// The images whose poses are `samples` (pose source = camera): matched by timestamp.
fn cams_to_images(cams: &[&CameraRow], samples: &[PoseSample]) -> Vec<ClipImage> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Vec::new();
    };
    let a = cams.partition_point(|c| c.timestamp_us < first.timestamp_us);
    let b = cams.partition_point(|c| c.timestamp_us <= last.timestamp_us);
    cams[a..b.max(a)].iter().map(clip_image).collect()
}

fn span_s(samples: &[PoseSample]) -> f64 {
    match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => (b.timestamp_us - a.timestamp_us) as f64 / 1e6,
        _ => 0.0,
    }
}

/// `numpy.unwrap` (discontinuity π, period 2π).
pub(crate) fn unwrap(p: &[f64]) -> Vec<f64> {
    let pi = std::f64::consts::PI;
    let tau = std::f64::consts::TAU;
    let mut out = Vec::with_capacity(p.len());
    let mut correction = 0.0;
    for (i, &v) in p.iter().enumerate() {
        if i > 0 {
            let dd = v - p[i - 1];
            let mut ddmod = (dd + pi).rem_euclid(tau) - pi;
            if ddmod == -pi && dd > 0.0 {
                ddmod = pi;
            }
            if dd.abs() >= pi {
                correction += ddmod - dd;
            }
        }
        out.push(v + correction);
    }
    out
}

/// Linear interpolation of `(xs, ys)` at `x`, extrapolating with the first/last segment, with
/// scipy `interp1d`'s choice of segment (`searchsorted` left, clipped to the valid range).
pub(crate) fn interp_extrapolate(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let n = xs.len().min(ys.len());
    match n {
        0 => f64::NAN,
        1 => ys[0],
        _ => {
            let idx = xs[..n].partition_point(|v| *v < x).clamp(1, n - 1);
            let (lo, hi) = (idx - 1, idx);
            let slope = (ys[hi] - ys[lo]) / (xs[hi] - xs[lo]);
            slope * (x - xs[lo]) + ys[lo]
        }
    }
}

/// The uniform grid of a clip: `n` points from 0 to `duration` (numpy `linspace`).
pub fn grid(duration: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![0.0],
        _ => {
            let step = duration / (n - 1) as f64;
            let mut g: Vec<f64> = (0..n).map(|i| i as f64 * step).collect();
            g[n - 1] = duration;
            g
        }
    }
}

/// Resamples a raw clip onto its grid, after checking its raw poses; `Err` is the reason.
pub(crate) fn resample(clip: &RawClip, cfg: &EgodynConfig) -> Result<Trajectory, String> {
    let s = &clip.samples;
    if s.len() < 2 {
        return Err(format!("{} raw poses, need at least 2", s.len()));
    }
    if let Some(k) = s
        .windows(2)
        .position(|w| w[1].timestamp_us <= w[0].timestamp_us)
    {
        return Err(format!(
            "raw timestamps not strictly increasing at pose {} ({} µs after {} µs)",
            k + 1,
            s[k + 1].timestamp_us,
            s[k].timestamp_us
        ));
    }
    if let Some(k) = s
        .iter()
        .position(|p| !(p.x.is_finite() && p.y.is_finite() && p.yaw.is_finite()))
    {
        return Err(format!("raw pose {k} is not finite"));
    }
    let t0 = s[0].timestamp_us;
    let ts: Vec<f64> = s
        .iter()
        .map(|p| (p.timestamp_us - t0) as f64 / 1e6)
        .collect();
    let xs: Vec<f64> = s.iter().map(|p| p.x).collect();
    let ys: Vec<f64> = s.iter().map(|p| p.y).collect();
    let yaws = unwrap(&s.iter().map(|p| p.yaw).collect::<Vec<_>>());
    let n = cfg.grid_samples(clip.duration_s);
    let t = grid(clip.duration_s, n);
    let at = |v: &[f64]| {
        t.iter()
            .map(|&g| interp_extrapolate(&ts, v, g))
            .collect::<Vec<_>>()
    };
    Ok(Trajectory {
        x: at(&xs),
        y: at(&ys),
        yaw: at(&yaws),
        t,
    })
}

/// The checks of `docs/egodyn.md` §4.1 on a clip's final arrays; `Err` is the reason.
pub(crate) fn validate(k: &Kinematics, duration_s: f64, cfg: &EgodynConfig) -> Result<(), String> {
    let v = &cfg.validation;
    let n = k.t.len();
    if n != v.samples {
        return Err(format!("{n} grid samples, expected {}", v.samples));
    }
    let channels: [(&str, &[f64]); 9] = [
        ("x", &k.x),
        ("y", &k.y),
        ("yaw", &k.yaw),
        ("speed", &k.speed),
        ("accel", &k.accel),
        ("jerk", &k.jerk),
        ("yaw_rate", &k.yaw_rate),
        ("lat_accel", &k.lat_accel),
        ("lat_accel_abs", &k.lat_accel_abs),
    ];
    for (name, c) in channels {
        if c.len() != n {
            return Err(format!("{name} has {} samples, t has {n}", c.len()));
        }
    }
    for (name, c) in std::iter::once(("t", k.t.as_slice())).chain(channels) {
        if let Some(i) = c.iter().position(|x| !x.is_finite()) {
            return Err(format!("{name}[{i}] is {} (NaN/inf)", c[i]));
        }
    }
    if let Some(i) = k.t.windows(2).position(|w| w[1] <= w[0]) {
        return Err(format!(
            "timestamps not strictly increasing at sample {}",
            i + 1
        ));
    }
    if k.t[0].abs() > v.start_tolerance_s {
        return Err(format!("clip starts at {} s, not 0", k.t[0]));
    }
    let span = k.t[n - 1] - k.t[0];
    if (span - cfg.clips.duration_s).abs() > v.duration_tolerance_s
        || (duration_s - span).abs() > v.duration_tolerance_s
    {
        return Err(format!(
            "clip lasts {span:.3} s, not {} ± {} s",
            cfg.clips.duration_s, v.duration_tolerance_s
        ));
    }
    if v.max_accel_g > 0.0 {
        let limit = v.max_accel_g * v.gravity;
        let peak_long = k.accel.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let peak_lat = k.lat_accel_abs.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        if peak_long > limit || peak_lat > limit {
            return Err(format!(
                "implausible acceleration: peak |a_long| {peak_long:.2}, peak a_lat {peak_lat:.2} m/s² (limit {limit:.2})"
            ));
        }
    }
    Ok(())
}
