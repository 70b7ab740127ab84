//! Building, rendering and measuring the scenes a chunk at a time: the camera images, and
//! how much of each box the keyframe images show.

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use nalgebra::Isometry3;
use rayon::prelude::*;

use super::super::render::{self, Canvas, Ground, ObjectPixels, Solid, View};
use super::super::rig::{CameraSpec, CAMERAS};
use super::super::world::SceneWorld;
use super::super::SynthOptions;
use super::plan::{plan_scene, scene_time, ScenePlan};
use crate::geometry::{pose, quat_from_yaw};
use crate::store::atomic::write_atomic;
use crate::Result;

/// Boxes farther than this are not drawn (m).
const DRAW_RANGE: f64 = 250.0;
/// Image size of the depth-only pass that measures visibility.
const VIS_WIDTH: u32 = 800;
const VIS_HEIGHT: u32 = 450;

thread_local! {
    /// Each worker thread's render buffers, reused from frame to frame.
    static CANVAS: RefCell<Canvas> = RefCell::new(Canvas::new());
}

/// One image to render.
pub(super) struct Job {
    scene: usize,
    ch: usize,
    idx: usize,
}

/// The ego pose (ego → global) at scene time `t`.
pub(super) fn ego_iso(world: &SceneWorld, t: f64) -> Isometry3<f64> {
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

/// A few scenes built, drawn and written together (see [`write`](super::write)), index for
/// index.
pub(super) struct Chunk {
    pub(super) worlds: Vec<SceneWorld>,
    pub(super) plans: Vec<ScenePlan>,
    grounds: Vec<Ground>,
}

/// Per scene of a chunk, per sample, per camera: what the keyframe image shows of each box.
pub(super) type KeyframeCoverage = Vec<Vec<Vec<Vec<ObjectPixels>>>>;

impl Chunk {
    /// Builds scenes `scenes` in parallel.
    pub(super) fn build(opts: &SynthOptions, scenes: std::ops::Range<usize>) -> Result<Self> {
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
    pub(super) fn jobs(&self) -> Vec<Job> {
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
    pub(super) fn render_images(
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
    pub(super) fn keyframe_coverage(&self, jobs: &[Job]) -> KeyframeCoverage {
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
