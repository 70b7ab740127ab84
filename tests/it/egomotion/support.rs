//! Scenes built from analytic ego trajectories, for the EgoDyn tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use drivegen::geometry::quat_from_yaw;
use drivegen::store::rejects::RejectLog;
use drivegen::store::{
    CameraRow, EgoPoseRow, FrameRow, Pose, SceneData, SceneRow, StoreMeta, StoreWriter,
};

/// A nuScenes-sized epoch (µs), so timestamps exercise the same float ranges as real data.
pub const T0_US: i64 = 1_533_151_603_512_404;

/// An ego trajectory: time since the scene start (s) → (x, y, yaw).
pub type PoseFn = dyn Fn(f64) -> (f64, f64, f64);

/// A scene whose CAM_FRONT images (and ego poses) come every `1/cam_hz` s for `duration_s`,
/// with a keyframe every `kf_every` images (the first image is not a keyframe, as in nuScenes
/// where the first keyframe has no history anyway).
pub fn scene(
    scene_id: &str,
    duration_s: f64,
    cam_hz: f64,
    kf_every: usize,
    pose: &PoseFn,
) -> SceneData {
    let step_us = (1e6 / cam_hz).round() as i64;
    let n = (duration_s * cam_hz).round() as usize + 1;
    let mut s = SceneData {
        scene: SceneRow {
            scene_id: scene_id.into(),
            source: "synthetic".into(),
            source_scene_id: scene_id.into(),
            description: "analytic trajectory".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    for i in 0..n {
        let ts = T0_US + i as i64 * step_us;
        let t = (ts - T0_US) as f64 / 1e6;
        let (x, y, yaw) = pose(t);
        let ego = Pose {
            t: [x, y, 0.0],
            q: quat_from_yaw(yaw),
        };
        let frame_idx = i.div_ceil(kf_every) as u32;
        let is_kf = i % kf_every == 0;
        if is_kf {
            s.frames.push(FrameRow {
                scene_id: scene_id.into(),
                frame_idx,
                timestamp_us: ts,
                is_keyframe: true,
                source_frame_id: format!("{scene_id}-sample-{frame_idx}"),
                ego,
            });
        }
        s.ego_poses.push(EgoPoseRow {
            scene_id: scene_id.into(),
            timestamp_us: ts,
            source_pose_id: format!("{scene_id}-pose-{i}"),
            sensor: Some("CAM_FRONT".into()),
            ego,
        });
        s.cameras.push(CameraRow {
            scene_id: scene_id.into(),
            frame_idx,
            camera: "CAM_FRONT".into(),
            camera_frame_id: format!("{scene_id}-cam-{i:04}"),
            timestamp_us: ts,
            is_keyframe: is_kf,
            image_path: format!("samples/CAM_FRONT/{scene_id}-{i:04}.jpg"),
            width: 1600,
            height: 900,
            fx: 1266.0,
            fy: 1266.0,
            cx: 800.0,
            cy: 450.0,
            cam: Pose {
                t: [1.7, 0.0, 1.5],
                q: [0.5, -0.5, 0.5, -0.5],
            },
            ego,
            distortion: None,
        });
    }
    s.update_counts();
    s
}

/// Writes `scenes` as a store in `dir`.
pub fn write_store(dir: &Path, scenes: &[SceneData]) {
    let mut w = StoreWriter::create(dir, StoreMeta::new("synthetic", "test", "/")).unwrap();
    for s in scenes {
        w.write_scene(s).unwrap();
    }
    w.finish(&RejectLog::new()).unwrap();
}

/// Constant speed `v` along heading `heading` from (x0, y0).
pub fn straight(v: f64, heading: f64) -> Box<PoseFn> {
    Box::new(move |t| {
        (
            100.0 + v * t * heading.cos(),
            -50.0 + v * t * heading.sin(),
            heading,
        )
    })
}

/// Constant speed `v` on a circle at yaw rate `w` (left for w > 0).
pub fn turn(v: f64, w: f64, heading: f64) -> Box<PoseFn> {
    Box::new(move |t| {
        let r = v / w;
        let h = heading + w * t;
        (
            100.0 + r * (h.sin() - heading.sin()),
            -50.0 - r * (h.cos() - heading.cos()),
            h,
        )
    })
}

/// Constant deceleration `a` from speed `v0` along +x (valid while v0 − a·t > 0).
pub fn decel(v0: f64, a: f64) -> Box<PoseFn> {
    Box::new(move |t| (v0 * t - a * t * t / 2.0, 0.0, 0.0))
}

/// A trajectory in the window starting `start` seconds into the scene: `f` of the clip time.
pub fn shifted(start: f64, f: Box<PoseFn>) -> Box<PoseFn> {
    Box::new(move |t| f(t - start))
}
