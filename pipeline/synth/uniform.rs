//! What the Waymo v2, Bench2Drive and Frenetix writers share: a uniform 10 Hz timeline that
//! starts at the nuScenes writer's first keyframe (so every fifth frame is a nuScenes keyframe,
//! and every frame a LIDAR_TOP sweep time), the boxes annotated at a time (the nuScenes
//! writer's 60 m range, decided per frame), and rendering one camera image.

use nalgebra::Isometry3;

use super::nuscenes::{scene_start_us, solids_at, ANNOTATION_RANGE};
use super::render::{self, Canvas, Ground, View};
use super::world::{Agent, AgentState, SceneWorld};
use crate::geometry::{pose, quat_from_yaw};
use crate::Result;

/// The uniform frame rate of these formats (Hz).
pub(crate) const FRAME_HZ: f64 = 10.0;
/// The frame period (µs).
pub(crate) const FRAME_US: i64 = 100_000;

/// The frame timestamps (µs) of a scene: `floor(duration · 10)` frames from the first keyframe.
pub(crate) fn frame_times(world: &SceneWorld, duration_s: f64) -> Vec<i64> {
    let start = scene_start_us(world.index, duration_s);
    let n = ((duration_s * FRAME_HZ).floor() as usize).max(1);
    (0..n).map(|i| start + i as i64 * FRAME_US).collect()
}

/// Scene time (s) of frame timestamp `ts`.
pub(crate) fn scene_time(world: &SceneWorld, duration_s: f64, ts: i64) -> f64 {
    (ts - scene_start_us(world.index, duration_s)) as f64 * 1e-6
}

/// The ego pose (ego → world) at scene time `t`.
pub(crate) fn ego_pose(world: &SceneWorld, t: f64) -> Isometry3<f64> {
    let e = world.ego_state(t);
    pose([e.x, e.y, 0.0], quat_from_yaw(e.yaw))
}

/// The agents annotated at scene time `t` (within the nuScenes writer's range of the ego), in
/// id order, with their states.
pub(crate) fn annotated(world: &SceneWorld, t: f64) -> Vec<(&Agent, AgentState)> {
    let e = world.ego_state(t);
    world
        .agents
        .iter()
        .filter_map(|a| {
            let st = a.state(t);
            let d = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
            (d <= ANNOTATION_RANGE).then_some((a, st))
        })
        .collect()
}

/// A synthetic lidar return count: what a 2000 pts/m²-at-1 m scanner would see of the box's
/// larger side, nothing past 55 m.
pub(crate) fn lidar_points(size_wlh: [f64; 3], distance: f64) -> u32 {
    if distance > 55.0 {
        return 0;
    }
    let side = size_wlh[0].max(size_wlh[1]) * size_wlh[2];
    (2000.0 * side / (distance * distance).max(1.0)).round() as u32
}

/// Renders and JPEG-encodes the view of a pinhole camera at `cam_to_world`
/// (OpenCV axes) with intrinsics `fx, fy, cx, cy`, at scene time `t`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn render_jpeg(
    canvas: &mut Canvas,
    world: &SceneWorld,
    ground: &Ground,
    cam_to_world: &Isometry3<f64>,
    k: [f64; 4],
    size: (u32, u32),
    t: f64,
    quality: u8,
) -> Result<Vec<u8>> {
    let view = View {
        width: size.0,
        height: size.1,
        fx: k[0],
        fy: k[1],
        cx: k[2],
        cy: k[3],
        rot: *cam_to_world.rotation.to_rotation_matrix().matrix(),
        pos: cam_to_world.translation.vector,
    };
    let solids = solids_at(world, t);
    render::render_into(canvas, &view, ground, &solids, false);
    render::encode_jpeg(&canvas.rgb, size.0, size.1, quality)
}
