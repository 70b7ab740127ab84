//! Writes the synthetic world as Waymo Open Dataset v2 component tables:
//! `OUT/<component>/<segment>.parquet` for `vehicle_pose`, `camera_calibration`,
//! `camera_image`, `lidar_box`, `lidar_camera_synced_box`, `projected_lidar_box`,
//! `camera_box` and `stats`, with the documented column names and types
//! (`docs/formats.md` §2.2: int8 camera names, `fixed_size_list<double>[16]` row-major
//! transforms).
//!
//! The world is the nuScenes writer's, at the same times: frames every 100 ms from the first
//! nuScenes keyframe (real Waymo frames are ~100.02 ms apart), the world frame is the synthetic
//! world's own (no re-centring, as in Waymo). The five cameras are the nuScenes rig's front,
//! front-left, front-right, back-left and back-right cameras (FRONT, FRONT_LEFT, FRONT_RIGHT,
//! SIDE_LEFT, SIDE_RIGHT), so all three formats share a geometry; they carry mild distortion
//! coefficients (`WaymoSynthOptions::distortion`) that `projected_lidar_box` is computed with,
//! while the rendered JPEGs are pinhole (the renderer has no lens model). Images are
//! global-shutter at the frame time (`rolling_shutter_direction` 5, GLOBAL_SHUTTER; the
//! readout time is zero), so `camera_image.pose` equals the frame's vehicle pose. Waymo labels
//! vehicles, pedestrians and cyclists only: cones, barriers, animals and the other classes of
//! the world are not labelled.

use std::cell::RefCell;
use std::path::Path;
use std::time::Instant;

use nalgebra::{Isometry3, Matrix3, Point3, Rotation3, Translation3, UnitQuaternion, Vector3};
use rayon::prelude::*;

use super::parquet_table::{schema, write_table, Kind, ParquetOut, TableBuf, Val};
use super::render::{Canvas, Ground};
use super::rig::{self, CameraSpec};
use super::tokens::{token, Rng};
use super::uniform::{annotated, ego_pose, frame_times, lidar_points, render_jpeg, scene_time};
use super::world::{Agent, AgentState, SceneWorld};
use super::SynthOptions;
use crate::geometry::{pose, wrap_pi};
use crate::{Error, Result};

/// Waymo camera code, name and the nuScenes rig channel it takes its geometry from.
pub const CAMERAS: [(i64, &str, &str); 5] = [
    (1, "FRONT", "CAM_FRONT"),
    (2, "FRONT_LEFT", "CAM_FRONT_LEFT"),
    (3, "FRONT_RIGHT", "CAM_FRONT_RIGHT"),
    (4, "SIDE_LEFT", "CAM_BACK_LEFT"),
    (5, "SIDE_RIGHT", "CAM_BACK_RIGHT"),
];

/// Mild barrel distortion `[k1, k2, p1, p2, k3]`, of the order of Waymo's real cameras.
pub const DEFAULT_DISTORTION: [f64; 5] = [-0.03, 0.006, 0.0004, -0.0003, 0.0];

/// Exposure (s) written in `rolling_shutter_params.shutter`.
const SHUTTER_S: f64 = 0.005;
/// Frames per `camera_image` record batch (and row group): the writer's memory bound.
const IMAGE_FRAMES_PER_BATCH: usize = 4;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct WaymoSynthOptions {
    pub base: SynthOptions,
    pub distortion: [f64; 5],
}

impl Default for WaymoSynthOptions {
    fn default() -> Self {
        Self {
            base: SynthOptions::default(),
            distortion: DEFAULT_DISTORTION,
        }
    }
}

/// What [`write`](fn@write) wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FormatSummary {
    pub format: String,
    pub scenes: usize,
    pub frames: usize,
    pub images: usize,
    pub boxes: usize,
    pub elapsed_s: f64,
}

impl std::fmt::Display for FormatSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "wrote {} synthetic scenes as {}: {} frames, {} camera images, {} boxes, in {:.1} s",
            self.scenes, self.format, self.frames, self.images, self.boxes, self.elapsed_s
        )
    }
}

/// The segment name of scene `index`, in Waymo's `<20 digits>_<4>_<3>_<4>_<3>` form.
pub fn segment_name(seed: u64, index: usize) -> String {
    let n = Rng::new(seed, &format!("waymo/segment/{index}")).next_u64() % 10u64.pow(19);
    let a = 1000 + (index as u64 * 37) % 8000;
    format!("{n:020}_{a:04}_000_{:04}_000", a + 20)
}

fn rig_camera(channel: &str) -> Result<&'static CameraSpec> {
    rig::CAMERAS
        .iter()
        .find(|c| c.channel == channel)
        .ok_or_else(|| Error::Internal(format!("no rig camera {channel}")))
}

/// Waymo camera axes (x forward, y left, z up) → OpenCV camera axes (x right, y down, z
/// forward): `p_cv = (−y, −z, x)`.
fn waymo_to_opencv() -> Rotation3<f64> {
    Rotation3::from_matrix_unchecked(Matrix3::new(0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0))
}

/// The Waymo extrinsic (Waymo camera → vehicle) of a rig camera.
pub(crate) fn extrinsic(cam: &CameraSpec) -> Isometry3<f64> {
    let cv_to_vehicle = pose(cam.translation, cam.rotation);
    cv_to_vehicle
        * Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::from_rotation_matrix(&waymo_to_opencv()),
        )
}

/// Waymo's camera model on a point in its camera frame: `None` behind the camera (x ≤ 0) or
/// where the radial factor leaves [0.8, 1.2] (the model's validity range).
pub fn project(p: &Vector3<f64>, intrinsic: &[f64; 9]) -> Option<[f64; 2]> {
    if p.x <= 0.0 {
        return None;
    }
    let [fu, fv, cu, cv, k1, k2, p1, p2, k3] = *intrinsic;
    let (u, v) = (-p.y / p.x, -p.z / p.x);
    let r2 = u * u + v * v;
    let radial = 1.0 + k1 * r2 + k2 * r2 * r2 + k3 * r2 * r2 * r2;
    if !(0.8..=1.2).contains(&radial) {
        return None;
    }
    let ud = u * radial + 2.0 * p1 * u * v + p2 * (r2 + 2.0 * u * u);
    let vd = v * radial + p1 * (r2 + 2.0 * v * v) + 2.0 * p2 * u * v;
    Some([fu * ud + cu, fv * vd + cv])
}

/// The label type code of a world class: 1 vehicle, 2 pedestrian, 4 cyclist; `None` for the
/// classes Waymo does not label.
pub(crate) fn type_code(class: &str) -> Option<i64> {
    match class {
        "car" | "truck" | "bus" | "trailer" | "construction_vehicle" | "emergency_vehicle" => {
            Some(1)
        }
        "pedestrian" => Some(2),
        "bicycle" | "motorcycle" => Some(4),
        _ => None,
    }
}

const SEG: &str = "key.segment_context_name";
const TS: &str = "key.frame_timestamp_micros";
const CAM: &str = "key.camera_name";
const LID: &str = "key.laser_object_id";

fn pose_columns() -> Vec<(&'static str, Kind)> {
    vec![
        (SEG, Kind::Utf8),
        (TS, Kind::Int64),
        (
            "[VehiclePoseComponent].world_from_vehicle.transform",
            Kind::Mat16,
        ),
    ]
}

fn calibration_columns() -> Vec<(&'static str, Kind)> {
    let p = "[CameraCalibrationComponent]";
    let mut v: Vec<(&'static str, Kind)> = vec![(SEG, Kind::Utf8), (CAM, Kind::Int8)];
    for f in [
        "intrinsic.f_u",
        "intrinsic.f_v",
        "intrinsic.c_u",
        "intrinsic.c_v",
        "intrinsic.k1",
        "intrinsic.k2",
        "intrinsic.p1",
        "intrinsic.p2",
        "intrinsic.k3",
    ] {
        v.push((leak(format!("{p}.{f}")), Kind::F64));
    }
    v.push((leak(format!("{p}.extrinsic.transform")), Kind::Mat16));
    v.push((leak(format!("{p}.width")), Kind::Int32));
    v.push((leak(format!("{p}.height")), Kind::Int32));
    v.push((leak(format!("{p}.rolling_shutter_direction")), Kind::Int8));
    v
}

/// Column names are built once per process from a fixed list; leaking them keeps the column
/// tables `&'static str` like the literal ones.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn image_columns() -> Vec<(&'static str, Kind)> {
    let p = "[CameraImageComponent]";
    let mut v: Vec<(&'static str, Kind)> =
        vec![(SEG, Kind::Utf8), (TS, Kind::Int64), (CAM, Kind::Int8)];
    v.push((leak(format!("{p}.image")), Kind::Binary));
    v.push((leak(format!("{p}.pose.transform")), Kind::Mat16));
    for a in ["x", "y", "z"] {
        v.push((leak(format!("{p}.velocity.linear_velocity.{a}")), Kind::F32));
    }
    for a in ["x", "y", "z"] {
        v.push((
            leak(format!("{p}.velocity.angular_velocity.{a}")),
            Kind::F64,
        ));
    }
    for f in [
        "pose_timestamp",
        "rolling_shutter_params.shutter",
        "rolling_shutter_params.camera_trigger_time",
        "rolling_shutter_params.camera_readout_done_time",
    ] {
        v.push((leak(format!("{p}.{f}")), Kind::F64));
    }
    v
}

fn box3_columns(p: &str, inner: &str) -> Vec<(&'static str, Kind)> {
    [
        "center.x", "center.y", "center.z", "size.x", "size.y", "size.z", "heading",
    ]
    .iter()
    .map(|f| (leak(format!("{p}.{inner}.{f}")), Kind::F64))
    .collect()
}

fn lidar_box_columns() -> Vec<(&'static str, Kind)> {
    let p = "[LiDARBoxComponent]";
    let mut v: Vec<(&'static str, Kind)> =
        vec![(SEG, Kind::Utf8), (TS, Kind::Int64), (LID, Kind::Utf8)];
    v.extend(box3_columns(p, "box"));
    v.push((leak(format!("{p}.type")), Kind::Int8));
    for f in ["speed", "acceleration"] {
        for a in ["x", "y", "z"] {
            v.push((leak(format!("{p}.{f}.{a}")), Kind::F64));
        }
    }
    v.push((leak(format!("{p}.num_lidar_points_in_box")), Kind::Int64));
    v.push((
        leak(format!("{p}.num_top_lidar_points_in_box")),
        Kind::Int64,
    ));
    v.push((leak(format!("{p}.difficulty_level.detection")), Kind::Int8));
    v.push((leak(format!("{p}.difficulty_level.tracking")), Kind::Int8));
    v
}

fn synced_columns() -> Vec<(&'static str, Kind)> {
    let p = "[LiDARCameraSyncedBoxComponent]";
    let mut v: Vec<(&'static str, Kind)> =
        vec![(SEG, Kind::Utf8), (TS, Kind::Int64), (LID, Kind::Utf8)];
    v.push((leak(format!("{p}.most_visible_camera_name")), Kind::Int8));
    v.extend(box3_columns(p, "camera_synced_box"));
    v
}

fn box2_columns(p: &str, id: &'static str) -> Vec<(&'static str, Kind)> {
    let mut v: Vec<(&'static str, Kind)> = vec![
        (SEG, Kind::Utf8),
        (TS, Kind::Int64),
        (CAM, Kind::Int8),
        (id, Kind::Utf8),
    ];
    for f in ["box.center.x", "box.center.y", "box.size.x", "box.size.y"] {
        v.push((leak(format!("{p}.{f}")), Kind::F64));
    }
    v.push((leak(format!("{p}.type")), Kind::Int8));
    v
}

fn projected_columns() -> Vec<(&'static str, Kind)> {
    box2_columns("[ProjectedLiDARBoxComponent]", LID)
}

fn camera_box_columns() -> Vec<(&'static str, Kind)> {
    let mut v = box2_columns("[CameraBoxComponent]", "key.camera_object_id");
    v.push((
        "[CameraBoxComponent].difficulty_level.detection",
        Kind::Int8,
    ));
    v.push(("[CameraBoxComponent].difficulty_level.tracking", Kind::Int8));
    v
}

fn stats_columns() -> Vec<(&'static str, Kind)> {
    let p = "[StatsComponent]";
    let mut v: Vec<(&'static str, Kind)> = vec![(SEG, Kind::Utf8), (TS, Kind::Int64)];
    for f in ["time_of_day", "location", "weather"] {
        v.push((leak(format!("{p}.{f}")), Kind::Utf8));
    }
    v
}

/// The component tables, their column lists.
fn components() -> Vec<(&'static str, Vec<(&'static str, Kind)>)> {
    vec![
        ("camera_box", camera_box_columns()),
        ("camera_calibration", calibration_columns()),
        ("camera_image", image_columns()),
        ("lidar_box", lidar_box_columns()),
        ("lidar_camera_synced_box", synced_columns()),
        ("projected_lidar_box", projected_columns()),
        ("stats", stats_columns()),
        ("vehicle_pose", pose_columns()),
    ]
}

/// `(schemas/ path, table name, schema)` of every component the writer produces.
pub(crate) fn published_schemas() -> Vec<(&'static str, &'static str, arrow::datatypes::SchemaRef)>
{
    components()
        .into_iter()
        .map(|(name, cols)| {
            (
                leak(format!("synth_waymo_v2/{name}.json")),
                name,
                schema(&cols),
            )
        })
        .collect()
}

thread_local! {
    static CANVAS: RefCell<Canvas> = RefCell::new(Canvas::new());
}

/// The 2-D box of a 3-D box in one camera, as Waymo's `projected_lidar_box` defines it: the
/// axis-aligned rectangle around the projected corners, clamped to the image; `None` when a
/// corner cannot be projected or the rectangle misses the image.
pub(crate) fn projected_box(
    corners_cam: &[Vector3<f64>; 8],
    intrinsic: &[f64; 9],
    width: u32,
    height: u32,
) -> Option<[f64; 4]> {
    let mut b = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    for c in corners_cam {
        let [u, v] = project(c, intrinsic)?;
        b = [b[0].min(u), b[1].min(v), b[2].max(u), b[3].max(v)];
    }
    let (w, h) = (f64::from(width), f64::from(height));
    if b[2] <= 0.0 || b[3] <= 0.0 || b[0] >= w || b[1] >= h {
        return None;
    }
    Some([b[0].max(0.0), b[1].max(0.0), b[2].min(w), b[3].min(h)])
}

/// The five cameras as written: code, name and rig geometry, with the intrinsics (distortion
/// included) and extrinsics that the calibration, the projected boxes and the images share.
struct WaymoRig {
    cams: Vec<(i64, &'static str, &'static CameraSpec)>,
    intrinsics: Vec<[f64; 9]>,
    extrinsics: Vec<Isometry3<f64>>,
    /// Image width and height.
    size: (u32, u32),
}

impl WaymoRig {
    fn new(opts: &WaymoSynthOptions) -> Result<Self> {
        let (w, h) = (opts.base.image_width, opts.base.image_height);
        let cams: Vec<(i64, &str, &CameraSpec)> = CAMERAS
            .iter()
            .map(|&(code, name, ch)| Ok((code, name, rig_camera(ch)?)))
            .collect::<Result<_>>()?;
        let intrinsics: Vec<[f64; 9]> = cams
            .iter()
            .map(|(_, _, c)| {
                let k = c.intrinsic(w, h);
                let d = opts.distortion;
                [
                    k[0][0], k[1][1], k[0][2], k[1][2], d[0], d[1], d[2], d[3], d[4],
                ]
            })
            .collect();
        let extrinsics: Vec<Isometry3<f64>> = cams.iter().map(|(_, _, c)| extrinsic(c)).collect();
        Ok(Self {
            cams,
            intrinsics,
            extrinsics,
            size: (w, h),
        })
    }
}

/// One scene being written as a segment: what each of its component tables is made from.
struct Segment<'a> {
    base: &'a SynthOptions,
    rig: &'a WaymoRig,
    /// The scene's index.
    k: usize,
    name: String,
    world: SceneWorld,
    times: Vec<i64>,
}

impl Segment<'_> {
    /// The segment's file of component `component` under `out`.
    fn file(&self, out: &Path, component: &str) -> std::path::PathBuf {
        out.join(component).join(format!("{}.parquet", self.name))
    }

    fn scene_time(&self, ts: i64) -> f64 {
        scene_time(&self.world, self.base.duration_s, ts)
    }

    /// `camera_calibration`: one row per camera.
    fn calibration(&self) -> TableBuf {
        let rig = self.rig;
        let (w, h) = rig.size;
        let mut cal = TableBuf::new(&calibration_columns());
        for (i, (code, _, _)) in rig.cams.iter().enumerate() {
            let mut row = vec![Val::S(self.name.clone()), Val::I(*code)];
            row.extend(rig.intrinsics[i].iter().map(|&x| Val::F(x)));
            row.push(Val::M(crate::formats::waymo::row_major(&rig.extrinsics[i])));
            row.extend([Val::I(i64::from(w)), Val::I(i64::from(h)), Val::I(5)]);
            cal.push(row);
        }
        cal
    }

    /// `camera_image`, a few frames at a time rendered in parallel, so that memory holds one
    /// batch of JPEGs; returns the number of images.
    fn write_images(&self, out: &Path) -> Result<usize> {
        let (rig, base, world) = (self.rig, self.base, &self.world);
        let (w, h) = rig.size;
        let ground = Ground::new(&world.roads, &world.junctions);
        let img_cols = image_columns();
        let rows_per_group = IMAGE_FRAMES_PER_BATCH * rig.cams.len();
        let mut images = ParquetOut::create(
            &self.file(out, "camera_image"),
            schema(&img_cols),
            rows_per_group,
        )?;
        let mut count = 0;
        for chunk in self.times.chunks(IMAGE_FRAMES_PER_BATCH) {
            let jobs: Vec<(i64, usize)> = chunk
                .iter()
                .flat_map(|&ts| (0..rig.cams.len()).map(move |ci| (ts, ci)))
                .collect();
            let jpegs: Vec<Vec<u8>> = jobs
                .par_iter()
                .map(|&(ts, ci)| {
                    let t = self.scene_time(ts);
                    let cam = rig.cams[ci].2;
                    let cam_to_world = ego_pose(world, t) * pose(cam.translation, cam.rotation);
                    let k = &rig.intrinsics[ci];
                    CANVAS.with(|c| {
                        render_jpeg(
                            &mut c.borrow_mut(),
                            world,
                            &ground,
                            &cam_to_world,
                            [k[0], k[1], k[2], k[3]],
                            (w, h),
                            t,
                            base.jpeg_quality,
                        )
                    })
                })
                .collect::<Result<_>>()?;
            let mut buf = TableBuf::new(&img_cols);
            for ((ts, ci), jpeg) in jobs.iter().zip(jpegs) {
                buf.push(self.image_row(*ts, rig.cams[*ci].0, jpeg));
                count += 1;
            }
            images.write(&buf.take_batch()?)?;
        }
        images.finish()?;
        Ok(count)
    }

    /// A `camera_image` row: the JPEG with the frame's pose, velocity and shutter timing.
    fn image_row(&self, ts: i64, code: i64, jpeg: Vec<u8>) -> Vec<Val> {
        let world = &self.world;
        let t = self.scene_time(ts);
        let e = world.ego_state(t);
        let t_s = ts as f64 * 1e-6;
        let mut row = vec![
            Val::S(self.name.clone()),
            Val::I(ts),
            Val::I(code),
            Val::B(jpeg),
            Val::M(crate::formats::waymo::row_major(&ego_pose(world, t))),
        ];
        row.extend([e.speed * e.yaw.cos(), e.speed * e.yaw.sin(), 0.0].map(Val::F));
        row.extend([0.0, 0.0, e.yaw_rate].map(Val::F));
        let trigger = t_s - 0.5 * SHUTTER_S;
        row.extend([t_s, SHUTTER_S, trigger, trigger + SHUTTER_S].map(Val::F));
        row
    }
}

/// The per-frame component tables of one segment, filled a frame at a time.
struct LabelTables {
    poses: TableBuf,
    lidar: TableBuf,
    synced: TableBuf,
    projected: TableBuf,
    camera_box: TableBuf,
    stats: TableBuf,
}

impl LabelTables {
    fn new() -> Self {
        Self {
            poses: TableBuf::new(&pose_columns()),
            lidar: TableBuf::new(&lidar_box_columns()),
            synced: TableBuf::new(&synced_columns()),
            projected: TableBuf::new(&projected_columns()),
            camera_box: TableBuf::new(&camera_box_columns()),
            stats: TableBuf::new(&stats_columns()),
        }
    }

    /// Every row of frame `ts`; returns the number of boxes labelled.
    fn push_frame(&mut self, seg: &Segment, ts: i64) -> usize {
        let world = &seg.world;
        let t = seg.scene_time(ts);
        let ego = ego_pose(world, t);
        let to_vehicle = ego.inverse();
        self.poses.push(vec![
            Val::S(seg.name.clone()),
            Val::I(ts),
            Val::M(crate::formats::waymo::row_major(&ego)),
        ]);
        let mut counts = 0usize;
        for (agent, st) in annotated(world, t) {
            let Some(kind) = type_code(agent.class()) else {
                continue;
            };
            counts += 1;
            self.push_box(seg, ts, &to_vehicle, agent, &st, kind);
        }
        self.stats.push(vec![
            Val::S(seg.name.clone()),
            Val::I(ts),
            Val::S("Day".into()),
            Val::S(format!(
                "location_{}",
                world.place.location.replace('-', "_")
            )),
            Val::S("sunny".into()),
        ]);
        counts
    }

    /// One labelled agent at frame `ts`: its `lidar_box` and `lidar_camera_synced_box` rows,
    /// and its rows in every camera that sees it.
    fn push_box(
        &mut self,
        seg: &Segment,
        ts: i64,
        to_vehicle: &Isometry3<f64>,
        agent: &Agent,
        st: &AgentState,
        kind: i64,
    ) {
        let t = seg.scene_time(ts);
        let id = token(
            seg.base.seed,
            &format!("waymo/object/{}/{}", seg.k, agent.id),
        );
        let c = to_vehicle * Point3::from(st.center);
        let heading = wrap_pi(st.yaw - seg.world.ego_state(t).yaw);
        let v = to_vehicle.rotation * Vector3::new(st.velocity[0], st.velocity[1], 0.0);
        let [bw, bl, bh] = agent.size;
        let dist = (c.x * c.x + c.y * c.y).sqrt();
        let n_pts = i64::from(lidar_points(agent.size, dist));
        let box3 = [c.x, c.y, c.z, bl, bw, bh, heading];
        let mut row = vec![Val::S(seg.name.clone()), Val::I(ts), Val::S(id.clone())];
        row.extend(box3.iter().map(|&x| Val::F(x)));
        row.push(Val::I(kind));
        row.extend([Val::F(v.x), Val::F(v.y), Val::F(0.0)]);
        row.extend([Val::F(0.0), Val::F(0.0), Val::F(0.0)]);
        row.extend([Val::I(n_pts), Val::I(n_pts), Val::I(1), Val::I(1)]);
        self.lidar.push(row);
        // Corners in the vehicle frame, then in each camera.
        let rot = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), heading);
        let corners: [Vector3<f64>; 8] = std::array::from_fn(|n| {
            let s = |bit: usize| if n & (1 << bit) == 0 { 0.5 } else { -0.5 };
            c.coords + rot * Vector3::new(s(0) * bl, s(1) * bw, s(2) * bh)
        });
        let best = self.push_camera_boxes(seg, ts, agent.id, &id, kind, &corners);
        let mut row = vec![
            Val::S(seg.name.clone()),
            Val::I(ts),
            Val::S(id),
            Val::I(best),
        ];
        row.extend(box3.iter().map(|&x| Val::F(x)));
        self.synced.push(row);
    }

    /// The `projected_lidar_box` and `camera_box` rows of a box (corners in the vehicle frame)
    /// in every camera it projects into; returns the code of the camera where it is largest
    /// (0: none).
    fn push_camera_boxes(
        &mut self,
        seg: &Segment,
        ts: i64,
        agent_id: u32,
        id: &str,
        kind: i64,
        corners: &[Vector3<f64>; 8],
    ) -> i64 {
        let rig = seg.rig;
        let (w, h) = rig.size;
        let mut best: (f64, i64) = (0.0, 0);
        for (ci, (code, _, _)) in rig.cams.iter().enumerate() {
            let inv = rig.extrinsics[ci].inverse();
            let cc = corners.map(|p| (inv * Point3::from(p)).coords);
            let Some(b) = projected_box(&cc, &rig.intrinsics[ci], w, h) else {
                continue;
            };
            let area = (b[2] - b[0]) * (b[3] - b[1]);
            if area > best.0 {
                best = (area, *code);
            }
            let center = [0.5 * (b[0] + b[2]), 0.5 * (b[1] + b[3])];
            let size = [b[2] - b[0], b[3] - b[1]];
            let vals = [center[0], center[1], size[0], size[1]].map(Val::F);
            let mut row = vec![
                Val::S(seg.name.clone()),
                Val::I(ts),
                Val::I(*code),
                Val::S(id.to_string()),
            ];
            row.extend(vals.iter().cloned());
            row.push(Val::I(kind));
            self.projected.push(row);
            let cid = token(
                seg.base.seed,
                &format!("waymo/camera_object/{}/{agent_id}/{code}", seg.k),
            );
            let mut row = vec![
                Val::S(seg.name.clone()),
                Val::I(ts),
                Val::I(*code),
                Val::S(cid),
            ];
            row.extend(vals);
            row.extend([Val::I(kind), Val::I(1), Val::I(1)]);
            self.camera_box.push(row);
        }
        best.1
    }

    /// Writes the six tables of segment `seg` under `out`.
    fn write(mut self, seg: &Segment, out: &Path) -> Result<()> {
        write_table(&seg.file(out, "vehicle_pose"), &mut self.poses)?;
        write_table(&seg.file(out, "lidar_box"), &mut self.lidar)?;
        write_table(&seg.file(out, "lidar_camera_synced_box"), &mut self.synced)?;
        write_table(&seg.file(out, "projected_lidar_box"), &mut self.projected)?;
        write_table(&seg.file(out, "camera_box"), &mut self.camera_box)?;
        write_table(&seg.file(out, "stats"), &mut self.stats)
    }
}

/// Writes the segments. Files already there with the same names are replaced atomically.
pub fn write(out: &Path, opts: &WaymoSynthOptions) -> Result<FormatSummary> {
    let base = &opts.base;
    base.validate()?;
    if opts.distortion.iter().any(|d| !d.is_finite()) {
        return Err(Error::invalid(
            "synth",
            "distortion coefficients must be finite",
        ));
    }
    let _owned = crate::store::owner::Owned::claim(out, "synthetic corpus", "the corpus")?;
    let started = Instant::now();
    let mut summary = FormatSummary {
        format: "waymo-v2".into(),
        ..Default::default()
    };
    let rig = WaymoRig::new(opts)?;
    for k in 0..base.scenes {
        let world = SceneWorld::build(base.seed, k, base.duration_s)?;
        let seg = Segment {
            base,
            rig: &rig,
            k,
            name: segment_name(base.seed, k),
            times: frame_times(&world, base.duration_s),
            world,
        };
        write_table(&seg.file(out, "camera_calibration"), &mut seg.calibration())?;
        let mut labels = LabelTables::new();
        for &ts in &seg.times {
            summary.boxes += labels.push_frame(&seg, ts);
        }
        summary.frames += seg.times.len();
        labels.write(&seg, out)?;
        summary.images += seg.write_images(out)?;
        summary.scenes += 1;
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_is_pinhole_without_distortion_and_refuses_behind_and_invalid() {
        let k = [1000.0, 1000.0, 800.0, 450.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        // 10 m ahead, 1 m left, 0.5 m up: u = 800 − 100, v = 450 − 50.
        let p = project(&Vector3::new(10.0, 1.0, 0.5), &k).unwrap();
        assert!(
            (p[0] - 700.0).abs() < 1e-9 && (p[1] - 400.0).abs() < 1e-9,
            "{p:?}"
        );
        assert!(project(&Vector3::new(-1.0, 0.0, 0.0), &k).is_none());
        // k1 = −0.5 at r = 1 gives a radial factor 0.5: outside [0.8, 1.2].
        let kd = [1000.0, 1000.0, 800.0, 450.0, -0.5, 0.0, 0.0, 0.0, 0.0];
        assert!(project(&Vector3::new(1.0, 1.0, 0.0), &kd).is_none());
        // Small radius: r² = 0.01, factor 1 − 0.005.
        let q = project(&Vector3::new(10.0, -1.0, 0.0), &kd).unwrap();
        assert!(
            (q[0] - (800.0 + 1000.0 * 0.1 * 0.995)).abs() < 1e-9,
            "{q:?}"
        );
    }

    #[test]
    fn segment_names_have_waymo_shape() {
        let s = segment_name(0, 3);
        let parts: Vec<&str> = s.split('_').collect();
        assert_eq!(parts.len(), 5, "{s}");
        assert_eq!(parts[0].len(), 20);
        assert!(parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())));
    }
}
