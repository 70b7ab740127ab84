//! Writes the synthetic world as Bench2Drive routes (`docs/formats.md` §3.2): per scene
//! a folder `OUT/<scenario>/<route>/` with `anno/00000.json.gz` per 10 Hz frame and the six
//! cameras' JPEGs under `camera/rgb_{front,front_left,front_right,back,back_left,back_right}/`.
//!
//! Everything is written as CARLA does: a left-handed world (x forward, y right, z up; the
//! synthetic world with y negated), rotations `[pitch, roll, yaw]` in degrees, box `extent`s
//! as half sizes, `world2cam`/`world2ego`/`world2vehicle` as inverses of CARLA's transform
//! matrices, and the camera rig of Bench2Drive's data collection (1600×900 at the native size,
//! fov 70°, the back camera 110°; f = W / (2 tan(fov/2)), cx = W/2, cy = H/2). Frames are at the
//! same times as the other formats (every 100 ms from the first nuScenes keyframe); boxes are
//! the agents within the nuScenes writer's 60 m (Bench2Drive itself saves 100 m). CARLA has
//! vehicles and walkers only, so trailers, construction vehicles, cones, barriers, animals and
//! `other` are not written. Two of Bench2Drive's documented data bugs are reproduced so the
//! ingest is exercised on them: walkers' `speed` is always 0, and static (parked) vehicles
//! carry a wrong `location`/`rotation` (the ingest must use `center` and `world2vehicle`).

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nalgebra::{Matrix4, Vector3, Vector4};
use rayon::prelude::*;
use serde_json::{json, Value};

use super::render::{Canvas, Ground};
use super::tokens::Rng;
use super::uniform::{annotated, frame_times, lidar_points, render_jpeg, scene_time};
use super::waymo::FormatSummary;
use super::world::{Agent, AgentState, SceneWorld, EGO_CENTER_AHEAD, EGO_SIZE};
use super::SynthOptions;
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

/// A Bench2Drive camera: sensor key, image folder, mount x, y, z (m, CARLA axes), yaw (°), fov (°).
pub struct B2dCamera {
    pub key: &'static str,
    pub folder: &'static str,
    pub mount: [f64; 3],
    pub yaw_deg: f64,
    pub fov_deg: f64,
}

/// The rig of Bench2Drive's `data_collect.py`.
pub const CAMERAS: [B2dCamera; 6] = [
    B2dCamera {
        key: "CAM_FRONT",
        folder: "rgb_front",
        mount: [0.80, 0.0, 1.60],
        yaw_deg: 0.0,
        fov_deg: 70.0,
    },
    B2dCamera {
        key: "CAM_FRONT_LEFT",
        folder: "rgb_front_left",
        mount: [0.27, -0.55, 1.60],
        yaw_deg: -55.0,
        fov_deg: 70.0,
    },
    B2dCamera {
        key: "CAM_FRONT_RIGHT",
        folder: "rgb_front_right",
        mount: [0.27, 0.55, 1.60],
        yaw_deg: 55.0,
        fov_deg: 70.0,
    },
    B2dCamera {
        key: "CAM_BACK",
        folder: "rgb_back",
        mount: [-2.0, 0.0, 1.60],
        yaw_deg: 180.0,
        fov_deg: 110.0,
    },
    B2dCamera {
        key: "CAM_BACK_LEFT",
        folder: "rgb_back_left",
        mount: [-0.32, -0.55, 1.60],
        yaw_deg: -110.0,
        fov_deg: 70.0,
    },
    B2dCamera {
        key: "CAM_BACK_RIGHT",
        folder: "rgb_back_right",
        mount: [-0.32, 0.55, 1.60],
        yaw_deg: 110.0,
        fov_deg: 70.0,
    },
];
/// The top lidar's mount (m, CARLA axes).
const LIDAR_MOUNT: [f64; 3] = [-0.39, 0.0, 1.84];
/// Bench2Drive writes its JPEGs at quality 20.
const JPEG_QUALITY: u8 = 20;

/// CARLA's transform matrix of a location and a `[pitch, roll, yaw]` rotation in degrees
/// (UE4's left-handed convention).
pub(crate) fn carla_matrix(loc: [f64; 3], rot_deg: [f64; 3]) -> Matrix4<f64> {
    let [p, r, y] = rot_deg.map(f64::to_radians);
    let (cp, sp, cr, sr, cy, sy) = (p.cos(), p.sin(), r.cos(), r.sin(), y.cos(), y.sin());
    Matrix4::new(
        cp * cy,
        cy * sp * sr - sy * cr,
        -cy * sp * cr - sy * sr,
        loc[0],
        sy * cp,
        sy * sp * sr + cy * cr,
        -sy * sp * cr + cy * sr,
        loc[1],
        sp,
        -cp * sr,
        cp * cr,
        loc[2],
        0.0,
        0.0,
        0.0,
        1.0,
    )
}

fn mat_json(m: &Matrix4<f64>) -> Value {
    json!((0..4)
        .map(|r| (0..4).map(|c| m[(r, c)]).collect::<Vec<_>>())
        .collect::<Vec<_>>())
}

fn inverse(m: &Matrix4<f64>) -> Result<Matrix4<f64>> {
    m.try_inverse()
        .ok_or_else(|| Error::Internal("synth: singular CARLA transform".into()))
}

/// The blueprint id and base type of a world class in CARLA, `None` for classes CARLA lacks.
pub(crate) fn blueprint(class: &str) -> Option<(&'static str, &'static str, &'static str)> {
    // (box class, type_id, base_type)
    match class {
        "car" => Some(("vehicle", "vehicle.tesla.model3", "car")),
        "truck" => Some(("vehicle", "vehicle.carlamotors.carlacola", "truck")),
        "bus" => Some(("vehicle", "vehicle.mitsubishi.fusorosa", "bus")),
        "emergency_vehicle" => Some(("vehicle", "vehicle.ford.ambulance", "van")),
        "motorcycle" => Some(("vehicle", "vehicle.yamaha.yzf", "motorcycle")),
        "bicycle" => Some(("vehicle", "vehicle.diamondback.century", "bicycle")),
        "pedestrian" => Some(("walker", "walker.pedestrian.0001", "")),
        _ => None,
    }
}

/// The route folder of scene `index`, relative to the output root.
pub fn route_dir(world: &SceneWorld) -> PathBuf {
    PathBuf::from(format!("Synthetic_{}", world.script.name.replace('-', "_")))
        .join(format!("TownSynth_Route{}_Weather1", world.index))
}

thread_local! {
    static CANVAS: RefCell<Canvas> = RefCell::new(Canvas::new());
}

fn gz(value: &Value) -> Result<Vec<u8>> {
    let text = serde_json::to_vec(value).map_err(|e| Error::Internal(format!("synth: {e}")))?;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    enc.write_all(&text)
        .and_then(|()| enc.finish())
        .map_err(|e| Error::io("anno.json.gz", e))
}

/// The camera rig a route is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rig {
    /// Bench2Drive's own ([`CAMERAS`]).
    #[default]
    Carla,
    /// The nuScenes rig ([`super::rig::CAMERAS`]) under the same camera names, so that
    /// camera-image results can be compared with the other formats camera for camera.
    NuScenes,
}

/// Writes one route per scene under `out`, with Bench2Drive's camera rig.
pub fn write(out: &Path, opts: &SynthOptions) -> Result<FormatSummary> {
    write_with_rig(out, opts, Rig::Carla)
}

/// [`write`](fn@write) with a chosen camera rig.
pub fn write_with_rig(out: &Path, opts: &SynthOptions, rig: Rig) -> Result<FormatSummary> {
    opts.validate()?;
    let _owned = crate::store::owner::Owned::claim(out, "synthetic corpus", "the corpus")?;
    let started = Instant::now();
    let mut summary = FormatSummary {
        format: "bench2drive".into(),
        ..Default::default()
    };
    let (w, h) = (opts.image_width, opts.image_height);
    for k in 0..opts.scenes {
        let world = SceneWorld::build(opts.seed, k, opts.duration_s)?;
        let route = out.join(route_dir(&world));
        let times = frame_times(&world, opts.duration_s);
        let ground = Ground::new(&world.roads, &world.junctions);
        let results: Vec<Result<usize>> = times
            .par_iter()
            .enumerate()
            .map(|(fi, &ts)| {
                let t = scene_time(&world, opts.duration_s, ts);
                let (anno, cams) = frame_anno(&world, opts.seed, t, (w, h), rig)?;
                let boxes = anno["bounding_boxes"].as_array().map_or(0, |a| a.len() - 1);
                write_atomic(
                    &route.join("anno").join(format!("{fi:05}.json.gz")),
                    &gz(&anno)?,
                )?;
                for (cam, (cam_to_world_rh, kk)) in CAMERAS.iter().zip(cams) {
                    let jpeg = CANVAS.with(|c| {
                        render_jpeg(
                            &mut c.borrow_mut(),
                            &world,
                            &ground,
                            &cam_to_world_rh,
                            kk,
                            (w, h),
                            t,
                            JPEG_QUALITY,
                        )
                    })?;
                    let path = route
                        .join("camera")
                        .join(cam.folder)
                        .join(format!("{fi:05}.jpg"));
                    write_atomic(&path, &jpeg)?;
                }
                Ok(boxes)
            })
            .collect();
        for r in results {
            summary.boxes += r?;
        }
        summary.frames += times.len();
        summary.images += times.len() * CAMERAS.len();
        summary.scenes += 1;
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A camera's right-handed OpenCV pose in the world and its `[fx, fy, cx, cy]`.
type CameraView = (nalgebra::Isometry3<f64>, [f64; 4]);
type CameraViews = Vec<CameraView>;

/// A nuScenes rig camera as a Bench2Drive sensor entry, and its right-handed OpenCV pose and
/// intrinsics (for rendering). The camera actor's axes (x forward, y right, z up, left-handed)
/// are the OpenCV axes turned: actor forward = optical axis, right = image x, up = −image y.
fn nuscenes_camera(
    key: &str,
    e: &super::world::EgoState,
    ego_m: &Matrix4<f64>,
    w: u32,
    h: u32,
) -> Result<(Value, CameraView)> {
    let spec = super::rig::CAMERAS
        .iter()
        .find(|c| c.channel == key)
        .ok_or_else(|| Error::Internal(format!("no nuScenes rig camera {key}")))?;
    let cv_to_ego = crate::geometry::pose(spec.translation, spec.rotation);
    // Right-handed actor axes (x forward, y left, z up) in OpenCV axes.
    let actor_in_cv = Matrix4::new(
        0.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0,
    );
    let flip = Matrix4::from_diagonal(&Vector4::new(1.0, -1.0, 1.0, 1.0));
    let cam2ego = flip * cv_to_ego.to_homogeneous() * actor_in_cv * flip;
    let cam_world = ego_m * cam2ego;
    // CARLA's [pitch, roll, yaw] of the actor (inverting `carla_matrix`).
    let pitch = cam_world[(2, 0)].clamp(-1.0, 1.0).asin();
    let roll = (-cam_world[(2, 1)]).atan2(cam_world[(2, 2)]);
    let yaw = cam_world[(1, 0)].atan2(cam_world[(0, 0)]);
    let k = spec.intrinsic(w, h);
    let sensor = json!({
        "location": [cam_world[(0, 3)], cam_world[(1, 3)], cam_world[(2, 3)]],
        "rotation": [pitch.to_degrees(), roll.to_degrees(), yaw.to_degrees()],
        "intrinsic": k,
        "world2cam": mat_json(&inverse(&cam_world)?),
        "cam2ego": mat_json(&cam2ego),
        "fov": 2.0 * (f64::from(w) / (2.0 * k[0][0])).atan().to_degrees(),
        "image_size_x": w,
        "image_size_y": h,
    });
    let ego_rh =
        nalgebra::Isometry3::new(Vector3::new(e.x, e.y, 0.0), Vector3::new(0.0, 0.0, e.yaw));
    Ok((
        sensor,
        (ego_rh * cv_to_ego, [k[0][0], k[1][1], k[0][2], k[1][2]]),
    ))
}

/// A Bench2Drive rig camera as its sensor entry, and its right-handed OpenCV pose and
/// intrinsics (for rendering); `ego_yaw_deg` is the ego's CARLA yaw.
fn carla_camera(
    cam: &B2dCamera,
    e: &super::world::EgoState,
    ego_m: &Matrix4<f64>,
    ego_yaw_deg: f64,
    (w, h): (u32, u32),
) -> Result<(Value, CameraView)> {
    let cam2ego = carla_matrix(cam.mount, [0.0, 0.0, cam.yaw_deg]);
    let cam_world = ego_m * cam2ego;
    let f = f64::from(w) / (2.0 * (cam.fov_deg.to_radians() / 2.0).tan());
    let (cx, cy) = (f64::from(w) / 2.0, f64::from(h) / 2.0);
    let sensor = json!({
        "location": [cam_world[(0, 3)], cam_world[(1, 3)], cam_world[(2, 3)]],
        "rotation": [0.0, 0.0, ego_yaw_deg + cam.yaw_deg],
        "intrinsic": [[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]],
        "world2cam": mat_json(&inverse(&cam_world)?),
        "cam2ego": mat_json(&cam2ego),
        "fov": cam.fov_deg,
        "image_size_x": w,
        "image_size_y": h,
    });
    // For rendering: the camera in the right-handed world with OpenCV axes.
    let yaw = e.yaw - cam.yaw_deg.to_radians();
    let p = ego_m * Vector4::new(cam.mount[0], cam.mount[1], cam.mount[2], 1.0);
    let fwd = Vector3::new(yaw.cos(), yaw.sin(), 0.0);
    let right = Vector3::new(yaw.sin(), -yaw.cos(), 0.0);
    let down = -Vector3::z();
    let rot = nalgebra::Rotation3::from_basis_unchecked(&[right, down, fwd]);
    let view = (
        nalgebra::Isometry3::from_parts(
            nalgebra::Translation3::new(p.x, -p.y, p.z),
            nalgebra::UnitQuaternion::from_rotation_matrix(&rot),
        ),
        [f, f, cx, cy],
    );
    Ok((sensor, view))
}

/// The ego's own box entry (`hero`), from its CARLA location, rotation and matrix.
fn ego_box(
    e: &super::world::EgoState,
    ego_m: &Matrix4<f64>,
    ego_loc: [f64; 3],
    ego_rot: [f64; 3],
) -> Result<Value> {
    let [ew, el, eh] = EGO_SIZE;
    let ego_center = ego_m * Vector4::new(EGO_CENTER_AHEAD, 0.0, eh / 2.0, 1.0);
    Ok(box_json(
        "ego_vehicle",
        "hero",
        "vehicle.lincoln.mkz_2020",
        ego_loc,
        ego_rot,
        [ego_center.x, ego_center.y, ego_center.z],
        [EGO_CENTER_AHEAD, 0.0, eh / 2.0],
        [el / 2.0, ew / 2.0, eh / 2.0],
        json!({"world2ego": mat_json(&inverse(ego_m)?), "speed": e.speed}),
    ))
}

/// An annotated agent's box entry, `None` for classes CARLA lacks; `e` is the ego at the
/// frame's time (for the distance).
fn agent_box(
    world: &SceneWorld,
    seed: u64,
    e: &super::world::EgoState,
    agent: &Agent,
    st: &AgentState,
) -> Result<Option<Value>> {
    let Some((class, type_id, base_type)) = blueprint(agent.class()) else {
        return Ok(None);
    };
    let [bw, bl, bh] = agent.size;
    let loc = [st.center[0], -st.center[1], 0.0];
    let rot = [0.0, 0.0, -st.yaw.to_degrees()];
    let m = carla_matrix(loc, rot);
    let center = [st.center[0], -st.center[1], st.center[2]];
    let dist = ((st.center[0] - e.x).powi(2) + (st.center[1] - e.y).powi(2)).sqrt();
    let id = format!("{}", 1000 + agent.id);
    let extra = if class == "walker" {
        json!({"world2ped": mat_json(&inverse(&m)?), "speed": 0.0, "gender": "female", "age": "adult"})
    } else {
        let mut rng = Rng::new(seed, &format!("b2d/color/{}/{}", world.index, agent.id));
        json!({
            "world2vehicle": mat_json(&inverse(&m)?),
            "speed": st.speed,
            "state": if agent.parked { "static" } else { "dynamic" },
            "base_type": base_type,
            "num_points": lidar_points(agent.size, dist),
            "brake": 0.0,
            "light_state": "NONE",
            "color": format!("{},{},{}", rng.below(256), rng.below(256), rng.below(256)),
        })
    };
    // Bench2Drive's static vehicles carry a wrong location and rotation (its own
    // docs/anno.md; `docs/formats.md` §3.2).
    let (loc_w, rot_w) = if class == "vehicle" && agent.parked {
        ([0.0; 3], [0.0; 3])
    } else {
        (loc, rot)
    };
    let mut b = box_json(
        class,
        &id,
        type_id,
        loc_w,
        rot_w,
        center,
        [0.0, 0.0, bh / 2.0],
        [bl / 2.0, bw / 2.0, bh / 2.0],
        extra,
    );
    b["world_cord"] = json!(world_cord(center, rot, [bl / 2.0, bw / 2.0, bh / 2.0]));
    b["distance"] = json!(dist);
    Ok(Some(b))
}

/// A box's eight vertices in the world from its true pose (CARLA axes), in Bench2Drive's
/// `world_cord` order.
fn world_cord(center: [f64; 3], rot: [f64; 3], ext: [f64; 3]) -> Vec<Vec<f64>> {
    let signs = [
        [1.0, 1.0, 1.0],
        [1.0, 1.0, -1.0],
        [1.0, -1.0, 1.0],
        [1.0, -1.0, -1.0],
        [-1.0, 1.0, 1.0],
        [-1.0, 1.0, -1.0],
        [-1.0, -1.0, 1.0],
        [-1.0, -1.0, -1.0],
    ];
    let cm = carla_matrix(center, rot);
    signs
        .iter()
        .map(|s| {
            let v = cm * Vector4::new(s[0] * ext[0], s[1] * ext[1], s[2] * ext[2], 1.0);
            vec![v.x, v.y, v.z]
        })
        .collect()
}

/// One frame's annotation, and each camera's right-handed OpenCV pose and intrinsics (for
/// rendering).
fn frame_anno(
    world: &SceneWorld,
    seed: u64,
    t: f64,
    (w, h): (u32, u32),
    rig: Rig,
) -> Result<(Value, CameraViews)> {
    let e = world.ego_state(t);
    // Left-handed: y and yaw negated.
    let ego_loc = [e.x, -e.y, 0.0];
    let ego_rot = [0.0, 0.0, -e.yaw.to_degrees()];
    let ego_m = carla_matrix(ego_loc, ego_rot);
    let mut sensors = serde_json::Map::new();
    let mut views = Vec::new();
    for cam in &CAMERAS {
        let (sensor, view) = match rig {
            Rig::NuScenes => nuscenes_camera(cam.key, &e, &ego_m, w, h)?,
            Rig::Carla => carla_camera(cam, &e, &ego_m, ego_rot[2], (w, h))?,
        };
        sensors.insert(cam.key.into(), sensor);
        views.push(view);
    }
    let lidar2ego = carla_matrix(LIDAR_MOUNT, [0.0; 3]);
    sensors.insert(
        "LIDAR_TOP".into(),
        json!({
            "world2lidar": mat_json(&inverse(&(ego_m * lidar2ego))?),
            "lidar2ego": mat_json(&lidar2ego),
        }),
    );
    let mut boxes = vec![ego_box(&e, &ego_m, ego_loc, ego_rot)?];
    for (agent, st) in annotated(world, t) {
        if let Some(b) = agent_box(world, seed, &e, agent, &st)? {
            boxes.push(b);
        }
    }
    let anno = json!({
        "x": ego_loc[0],
        "y": ego_loc[1],
        "throttle": 0.0,
        "steer": 0.0,
        "brake": 0.0,
        "reverse": false,
        // The compass: CARLA's yaw, in radians.
        "theta": -e.yaw,
        "speed": e.speed,
        "x_command_far": ego_loc[0],
        "y_command_far": ego_loc[1],
        "command_far": 4,
        "x_command_near": ego_loc[0],
        "y_command_near": ego_loc[1],
        "command_near": 4,
        "should_brake": 0,
        "only_ap_brake": 0,
        "x_target": ego_loc[0],
        "y_target": ego_loc[1],
        "next_command": 4,
        "weather": {"cloudiness": 10.0, "precipitation": 0.0, "sun_altitude_angle": 45.0},
        "acceleration": [e.accel, 0.0, 0.0],
        "angular_velocity": [0.0, 0.0, -e.yaw_rate.to_degrees()],
        "sensors": Value::Object(sensors),
        "bounding_boxes": boxes,
    });
    Ok((anno, views))
}

#[allow(clippy::too_many_arguments)]
fn box_json(
    class: &str,
    id: &str,
    type_id: &str,
    location: [f64; 3],
    rotation: [f64; 3],
    center: [f64; 3],
    bbx_loc: [f64; 3],
    extent: [f64; 3],
    extra: Value,
) -> Value {
    let mut b = json!({
        "class": class,
        "id": id,
        "type_id": type_id,
        "location": location,
        "rotation": rotation,
        "bbx_loc": bbx_loc,
        "center": center,
        "extent": extent,
        "semantic_tags": [if class == "walker" { 12 } else { 14 }],
        "road_id": 0,
        "lane_id": 0,
        "section_id": 0,
    });
    if let (Some(o), Value::Object(x)) = (b.as_object_mut(), extra) {
        o.extend(x);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nuscenes_rig_cameras_read_back_as_the_rig() {
        use crate::formats::carla::{isometry_rh, opencv_in_actor};
        let world = SceneWorld::build(0, 1, 2.0).unwrap();
        let e = world.ego_state(0.7);
        let ego_m = carla_matrix([e.x, -e.y, 0.0], [0.0, 0.0, -e.yaw.to_degrees()]);
        for cam in &CAMERAS {
            let (sensor, (view, k)) = nuscenes_camera(cam.key, &e, &ego_m, 800, 450).unwrap();
            let spec = super::super::rig::CAMERAS
                .iter()
                .find(|c| c.channel == cam.key)
                .unwrap();
            let m = Matrix4::from_fn(|r, c| sensor["cam2ego"][r][c].as_f64().unwrap());
            // The reader's conversion (flip y, then OpenCV axes in the actor's) gives back the
            // rig's OpenCV camera → ego pose.
            let got = isometry_rh(&m, 1e-9).unwrap()
                * nalgebra::Isometry3::from_parts(
                    nalgebra::Translation3::identity(),
                    opencv_in_actor(),
                );
            let want = crate::geometry::pose(spec.translation, spec.rotation);
            assert!(
                (got.to_homogeneous() - want.to_homogeneous()).abs().max() < 1e-9,
                "{}",
                cam.key
            );
            // world2cam is the inverse of the actor's world matrix, location its translation.
            let w2c = Matrix4::from_fn(|r, c| sensor["world2cam"][r][c].as_f64().unwrap());
            let loc = w2c.try_inverse().unwrap();
            for (i, l) in sensor["location"].as_array().unwrap().iter().enumerate() {
                assert!((loc[(i, 3)] - l.as_f64().unwrap()).abs() < 1e-6);
            }
            // The rendering pose is the ego's right-handed pose times the rig pose.
            let ego = nalgebra::Isometry3::new(
                Vector3::new(e.x, e.y, 0.0),
                Vector3::new(0.0, 0.0, e.yaw),
            );
            assert!(
                ((ego * want).to_homogeneous() - view.to_homogeneous())
                    .abs()
                    .max()
                    < 1e-9
            );
            let kk = spec.intrinsic(800, 450);
            assert_eq!(k, [kk[0][0], kk[1][1], kk[0][2], kk[1][2]]);
        }
    }

    #[test]
    fn carla_matrix_is_a_left_handed_yaw() {
        // Yaw +90° turns CARLA's x (forward) onto its y (right).
        let m = carla_matrix([1.0, 2.0, 3.0], [0.0, 0.0, 90.0]);
        let v = m * Vector4::new(1.0, 0.0, 0.0, 0.0);
        assert!((v - Vector4::new(0.0, 1.0, 0.0, 0.0)).norm() < 1e-12);
        assert_eq!(m[(0, 3)], 1.0);
        // Pitch +90° lifts x onto z.
        let p = carla_matrix([0.0; 3], [90.0, 0.0, 0.0]) * Vector4::new(1.0, 0.0, 0.0, 0.0);
        assert!((p - Vector4::new(0.0, 0.0, 1.0, 0.0)).norm() < 1e-12);
    }
}
